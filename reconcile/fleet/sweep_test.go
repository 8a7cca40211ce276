package fleet_test

import (
	"context"
	"crypto/sha1" // a git blob id, not a security boundary
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/fleet"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
)

// repo is a universe repository at one revision, in memory.
type repo map[string]string

func (r repo) Head(context.Context) (string, error) { return "rev1", nil }

func (r repo) Snapshot(_ context.Context, rev string) (*source.Snapshot, error) {
	s := &source.Snapshot{Revision: rev}
	for p, data := range r {
		sum := sha1.Sum([]byte(data)) // a blob id
		s.Files = append(s.Files, source.File{Path: p, BlobSHA: hex.EncodeToString(sum[:]), Data: []byte(data)})
	}
	slices.SortFunc(s.Files, func(a, b source.File) int { return strings.Compare(a.Path, b.Path) })
	return s, nil
}

func cmYAML(ns, name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: " + ns + "\n  name: " + name + "\ndata:\n  from: git\n"
}

// sweeper is a git sweep over the view of src for target, on cfg, owning namespaces.
func sweeper(t *testing.T, cfg *rest.Config, src source.Source, target fleet.Target, namespaces ...string) *gitops.Sweeper {
	t.Helper()
	scope, err := gitops.NewScope(namespaces, nil)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := gitops.NewSweeper(cfg, fleet.View{Source: src, Target: target}, scope, gitops.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	return sw
}

// TestSweepTwoClusters: one universe repository, two clusters. The CR under
// orgs/acme/clusters/b-sweep/ lands on B (through its Bound), not on the home cluster; the
// home file lands home, not on B; a file of B's naming a namespace outside the
// registration's bound is refused, by file and object — by the sweep's scope (the bound),
// and by the Bound's transport when a sweep's scope would let it through.
func TestSweepTwoClusters(t *testing.T) {
	h := home(t)
	homeCfg := testbed.APIServer(t)
	b := clusterB(t)
	bc, err := client.New(b, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ensureNS(t, bc, "acme-web")
	ensureNS(t, bc, "lux-chain")
	ensureNS(t, h, "acme-web")
	register(t, h, "b-sweep", acme, b.Host, []string{"acme-web"}, selfContained(t, b, ""))

	const (
		homeFile    = "apps/home.yaml"
		landedFile  = "orgs/acme/clusters/b-sweep/web/landed.yaml"
		outsideFile = "orgs/acme/clusters/b-sweep/chain/outside.yaml"
	)
	src := repo{
		homeFile:    cmYAML("acme-web", "home-cm"),
		landedFile:  cmYAML("acme-web", "landed"),
		outsideFile: cmYAML("lux-chain", "outside"),
	}
	snap, _ := src.Snapshot(t.Context(), "rev1")
	targets := fleet.Targets(snap)
	if len(targets) != 1 || targets[0].String() != "acme/b-sweep" {
		t.Fatalf("targets %v, want acme/b-sweep", targets)
	}
	target := targets[0]
	bound, err := newFleet(t, h).Reach(fleet.WithCaller(t.Context(), target.Caller), target.Cluster)
	if err != nil {
		t.Fatalf("Reach %s: %v", target, err)
	}

	homeReport := sweeper(t, homeCfg, src, fleet.Target{}, "acme-web").Sweep(t.Context())
	bReport := sweeper(t, bound.Config(), src, target, bound.Cluster().Namespaces...).Sweep(t.Context())
	if homeReport.Error != "" || bReport.Error != "" {
		t.Fatalf("sweeps failed: home %q, B %q", homeReport.Error, bReport.Error)
	}
	exists := func(c client.Client, ns, name string) bool {
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if !exists(bc, "acme-web", "landed") {
		t.Errorf("%s did not land on B: %+v", landedFile, bReport.Results)
	}
	if exists(h, "acme-web", "landed") {
		t.Errorf("%s landed on the home cluster", landedFile)
	}
	if !exists(h, "acme-web", "home-cm") || exists(bc, "acme-web", "home-cm") {
		t.Errorf("%s: want it home only", homeFile)
	}
	if exists(bc, "lux-chain", "outside") {
		t.Errorf("%s was applied outside B's bound", outsideFile)
	}
	var skipped bool
	for _, sk := range bReport.Skips {
		if sk.File == outsideFile && sk.Name == "outside" && sk.Namespace == "lux-chain" && sk.Reason == gitops.ReasonNamespaceNotOwned {
			skipped = true
			t.Logf("refused: %s %s: %s", sk.File, sk.Object(), sk.Message)
		}
	}
	if !skipped {
		t.Errorf("B's report does not refuse %s by file and object: %+v", outsideFile, bReport.Skips)
	}

	// A sweep whose scope would own every namespace still cannot leave the bound: the
	// Bound's transport refuses the apply, and the report names the object and its file.
	wide := sweeper(t, bound.Config(), src, target, gitops.All).Sweep(t.Context())
	var refused bool
	for _, r := range wide.Results {
		if r.Object.Name == "outside" {
			msg := r.Message
			if r.Err != nil {
				msg += " " + r.Err.Error()
			}
			refused = r.Action == apply.Failed && strings.Contains(msg, "outside the registration's namespaces bound [acme-web]") &&
				wide.Files[r.Object] == outsideFile
			t.Logf("refused: %s %s/%s (%s): %s", r.Object.Kind, r.Object.Namespace, r.Object.Name, wide.Files[r.Object], msg)
		}
	}
	if !refused {
		t.Errorf("the wide sweep on B did not refuse %s naming the bound: %+v", outsideFile, wide.Results)
	}
	if exists(bc, "lux-chain", "outside") {
		t.Errorf("%s was applied outside B's bound by the wide sweep", outsideFile)
	}
}
