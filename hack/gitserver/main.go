// Command gitserver serves a local git repository over HTTP (basic auth) and SSH for the
// demo and for manual testing, seeded with the files of a directory:
//
//	go run ./hack/gitserver --seed e2e/testdata/universe --state DIR
//
// It writes DIR/password (the HTTP password, for --gitops-token-file), DIR/id_ed25519 and
// DIR/known_hosts (for SSH), prints the repository's HTTP URL on stdout, and serves until
// interrupted.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/openuniverse/operator/e2e/testbed"
)

func main() {
	seed := flag.String("seed", "", "directory whose files form the first commit")
	state := flag.String("state", filepath.Join(os.TempDir(), "universe-gitserver"), "directory for repositories and credentials")
	repo := flag.String("repo", "universe.git", "repository name")
	branch := flag.String("branch", "main", "branch")
	user := flag.String("user", "git", "HTTP user name")
	flag.Parse()
	if err := run(*seed, *state, *repo, *branch, *user); err != nil {
		fmt.Fprintln(os.Stderr, "gitserver:", err)
		os.Exit(1)
	}
}

func run(seed, state, repo, branch, user string) error {
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	password := hex.EncodeToString(secret)
	g, err := testbed.NewGitServer(filepath.Join(state, "repos"), user, password)
	if err != nil {
		return err
	}
	defer g.Stop()
	for name, data := range map[string][]byte{"password": []byte(password), "id_ed25519": g.ClientKey, "known_hosts": g.KnownHosts} {
		if err := os.WriteFile(filepath.Join(state, name), data, 0o600); err != nil {
			return err
		}
	}
	if seed != "" {
		sha, err := g.CommitDir(repo, branch, "Seed the universe", seed)
		if err != nil {
			return fmt.Errorf("seed %s: %w", seed, err)
		}
		fmt.Fprintf(os.Stderr, "gitserver: %s@%s seeded from %s at %s\n", repo, branch, seed, sha)
	}
	fmt.Fprintf(os.Stderr, "gitserver: http %s (user %s, password in %s), ssh %s\n", g.HTTPURL(repo), user, filepath.Join(state, "password"), g.SSHURL(repo))
	fmt.Println(g.HTTPURL(repo))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return nil
}
