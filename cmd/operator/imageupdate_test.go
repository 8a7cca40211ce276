package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/upgrade/image"
)

// TestImageUpdateOwnTokenOnlyForTheUniverse: issue 23 — the operator's token went to any
// ImageUpdate naming the universe repository. Now it goes only to the repository the finder
// checks files of, never without the sweep, and never to another spelling or repository.
func TestImageUpdateOwnTokenOnlyForTheUniverse(t *testing.T) {
	var got []string
	with := func(repo string, _ *image.GitCredentials) (source.Writer, error) {
		got = append(got, "own:"+repo)
		return nil, nil
	}
	without := func(repo string, _ *image.GitCredentials) (source.Writer, error) {
		got = append(got, "none:"+repo)
		return nil, nil
	}
	u := &image.Universe{Repo: "https://git.example/u.git"}
	w := ownFor(u, with, without)
	_, _ = w("https://git.example/u.git", nil)
	_, _ = w("https://git.example/other.git", nil)
	_, _ = w("https://git.example/u.git/", nil)
	_, _ = w("https://git.example/other.git", &image.GitCredentials{Token: source.NewToken("t")}) // its own Secret
	_, _ = ownFor(nil, with, without)("https://git.example/u.git", nil)
	want := []string{"own:https://git.example/u.git", "none:https://git.example/other.git", "none:https://git.example/u.git/", "own:https://git.example/other.git", "none:https://git.example/u.git"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("call %d: %s, want %s", i, got[i], want[i])
		}
	}
}

func TestImageRegistryFlags(t *testing.T) {
	o := &imageOptions{}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--image-registry-hosts", "ghcr.io,*.pkg.dev", "--image-allow-private-registries", "--image-max-tags", "10"}); err != nil {
		t.Fatal(err)
	}
	r, err := o.registry()
	if err != nil || !r.AllowPrivate || r.MaxTags != 10 || r.MaxBytes != image.DefaultMaxBytes || len(r.Hosts) != 2 {
		t.Fatalf("%+v %v", r, err)
	}
	o.RegistryHosts = []string{"ghcr.io/x"}
	if _, err := o.registry(); err == nil {
		t.Fatal("a glob with a path accepted")
	}
}
