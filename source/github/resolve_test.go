package github

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openuniverse/operator/source"
)

func TestResolvePreviewRefs(t *testing.T) {
	f, srv := newFake(t)
	main1 := f.commit(v1)
	feature := f.pushRef("heads/feature", map[string]string{"crs/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\ndata: {feature: \"1\"}\n",
		"crs/nested/b.yml": v1["crs/nested/b.yml"], "crs/kustomization.yaml": v1["crs/kustomization.yaml"]})
	pull := f.pushRef("pull/7/head", map[string]string{"crs/a.yaml": v1["crs/a.yaml"], "crs/nested/b.yml": "x: 7\n"})
	f.mu.Lock()
	f.refs["tags/v1"] = "7a9000000000000000000000000000000000000a" // an annotated tag object
	f.tags["7a9000000000000000000000000000000000000a"] = pull
	f.mu.Unlock()
	s := newSource(t, srv, "crs", staticCreds{source.NewToken(token)})
	ctx := context.Background()
	if _, err := s.Head(ctx); err != nil {
		t.Fatal(err)
	}
	base, err := s.Snapshot(ctx, main1)
	if err != nil {
		t.Fatal(err)
	}
	f.take()

	for _, c := range []struct {
		ref, want, endpoint string
	}{
		{"feature", feature, "commits/feature"},
		{"refs/heads/feature", feature, "git/ref/heads/feature"},
		{"refs/pull/7/head", pull, "git/ref/pull/7/head"},
		{"refs/tags/v1", pull, "git/ref/tags/v1"},
		{pull, pull, "commits/" + pull},
	} {
		got, err := s.Resolve(ctx, c.ref)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", c.ref, got, err, c.want)
		}
		reqs := f.take()
		if len(reqs) == 0 || reqs[0].Path != "/api/repos/o/r/"+c.endpoint {
			t.Errorf("Resolve(%s) asked %v, want %s first", c.ref, endpoints(reqs), c.endpoint)
		}
		for _, r := range reqs {
			if r.Header.Get("Authorization") != "Bearer "+token {
				t.Errorf("Resolve(%s): %s without the token", c.ref, r.Path)
			}
		}
	}

	// Snapshot reads any resolved commit; the unchanged blobs come from the cache.
	snap, err := s.Snapshot(ctx, feature)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Refetched != 1 || !strings.Contains(string(snap.Files[0].Data), "feature") {
		t.Errorf("Snapshot(feature) = %d refetched, a.yaml %q; want 1 and the branch's a.yaml", snap.Refetched, snap.Files[0].Data)
	}
	snap, err = s.Snapshot(ctx, pull)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 2 || string(snap.Files[1].Data) != "x: 7\n" {
		t.Errorf("Snapshot(pull) files = %v", paths(snap))
	}

	// The followed branch is untouched: its head still answers 304 to the kept ETag.
	f.take()
	if head, err := s.Head(ctx); err != nil || head != main1 {
		t.Errorf("Head() = %s, %v; want %s", head, err, main1)
	}
	if diff := cmp.Diff([]string{"GET head 304"}, endpoints(f.take())); diff != "" {
		t.Errorf("Head after Resolve (-want +got):\n%s", diff)
	}
	again, err := s.Snapshot(ctx, main1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(paths(base), paths(again)); diff != "" {
		t.Errorf("followed branch snapshot (-want +got):\n%s", diff)
	}

	// What does not exist is named, with the repository, never with the token.
	for _, bad := range []string{"nope", "refs/pull/99/head", strings.Repeat("ab", 20)} {
		_, err := s.Resolve(ctx, bad)
		if err == nil {
			t.Errorf("Resolve(%s) succeeded", bad)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, bad) || !strings.Contains(msg, "o/r") || strings.Contains(msg, token) {
			t.Errorf("Resolve(%s) error = %q; want the ref and the repository, not the token", bad, msg)
		}
		t.Logf("Resolve(%s): %v", bad, err)
	}
}

func paths(s *source.Snapshot) []string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Path)
	}
	return out
}
