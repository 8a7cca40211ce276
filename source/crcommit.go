package source

import "context"

// CRImage is one change of a CR's spec.image, committed to the file of the universe
// repository (the one the git sweep follows) that declares the CR.
type CRImage struct {
	// APIVersion, Kind, Namespace and Name name the CR. Only the group of APIVersion counts:
	// a file may spell another served version.
	APIVersion, Kind, Namespace, Name string
	// Image is the new image, repository:tag (never a digest: the file declares a tag).
	Image string
	// MoveRepository sets spec.image.repository to Image's repository when the file names
	// another (a rollback or revert to a recorded image). Without it such a change is refused:
	// a tag is never moved to another image.
	MoveRepository bool
	// File is where the git sweep last saw the CR, possibly empty; a committer that reads the
	// repository finds the declaring file at the head and only falls back to it.
	File string
	// Message is the commit message; required. It must not carry a secret.
	Message string
}

// CRCommitter commits CR image changes to the universe repository: one commit per change,
// byte-exact (only the image's tokens change), never forced. A file already naming the image
// is no commit: Result.Commit is empty and Result.Parent is the head that names it. After a
// commit lands the committer wakes the git sweep, so the change is applied at once; callers
// never ask the sweep themselves. The apps drive loop (the platform's declared tag), the
// upgrade machine (revertInGit) and the deploy plane (a rollback of a CR from git) commit
// through it; cmd/operator holds the one implementation.
type CRCommitter interface {
	CommitImage(ctx context.Context, c CRImage) (Result, error)
}
