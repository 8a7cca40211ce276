package gitclone

import (
	"fmt"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Commit describes one commit of the repository.
type Commit struct {
	Author, Email, Message string
	When                   time.Time
}

// Commit reads rev (a full SHA) from the local clone: the commits the sweep fetched, so the
// heads it read (the clone is shallow). It sends the server nothing.
func (s *Source) Commit(rev string) (Commit, error) {
	if !plumbing.IsHash(rev) {
		return Commit{}, fmt.Errorf("%q is not a commit SHA", rev)
	}
	repo, err := git.PlainOpen(s.dir)
	if err != nil {
		return Commit{}, fmt.Errorf("no local clone yet: %w", err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(rev))
	if err != nil {
		return Commit{}, fmt.Errorf("commit %s is not in the local clone: %w", rev, err)
	}
	return Commit{Author: c.Author.Name, Email: c.Author.Email, Message: c.Message, When: c.Author.When}, nil
}
