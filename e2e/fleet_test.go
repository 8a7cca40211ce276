package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/fleet"
	"github.com/openuniverse/operator/reconcile/gitops"
)

// fleetReport is GET /gitops of an operator run with --fleet.
type fleetReport struct {
	gitops.Report
	Clusters []gitops.Report `json:"clusters"`
}

func (o *operator) fleetReport() (*fleetReport, error) {
	resp, err := http.Get(o.hook + "/gitops")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := &fleetReport{}
	return r, json.NewDecoder(resp.Body).Decode(r)
}

// cluster returns the report of cluster key ("<org>/<name>"), nil when it has none.
func (r *fleetReport) cluster(key string) *gitops.Report {
	for i := range r.Clusters {
		if r.Clusters[i].Cluster == key {
			return &r.Clusters[i]
		}
	}
	return nil
}

// kubeconfigOf is cfg's credential as a self-contained kubeconfig (data, no file paths);
// with token, that bearer token instead of the client certificate.
func kubeconfigOf(t *testing.T, cfg *rest.Config, token string) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	if token != "" {
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func cmValue(ns, name, value string) []byte {
	return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: " + ns + "\n  name: " + name + "\ndata:\n  v: " + value + "\n")
}

// TestFleetTwoClusters: one universe repository, two real control planes — the home
// cluster the operator runs against (A) and a registered cluster B, started beside it —
// and the built binary with --fleet. A CR under orgs/acme/clusters/<B>/ lands on B and not
// on A; B's bounded registration refuses a namespace outside its bound, by name; a path of
// org acme naming org other's cluster reaches nothing; B down leaves A syncing, B's rows
// say why, and B recovers by itself; a credential rotated in its Secret is picked up
// without a restart. One story on two control planes, its steps in order: CI pays one extra
// apiserver for it.
func TestFleetTwoClusters(t *testing.T) {
	cl := getCluster(t)
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "e2e-fleet-b-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := testbed.Start(ctx, testbed.Options{Dir: dir})
	if err != nil {
		t.Fatalf("start cluster B: %v", err)
	}
	t.Cleanup(func() { b.Stop(); os.RemoveAll(dir) })
	bCfg := rest.CopyConfig(b.Config)
	if err := rest.LoadTLSFiles(bCfg); err != nil {
		t.Fatal(err)
	}
	bc, err := client.New(bCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(operatorBin, "install", "--crds-only", "--kubeconfig", b.Kubeconfig).CombinedOutput(); err != nil {
		t.Fatalf("install the CRDs on B: %v\n%s", err, out)
	}
	for _, ns := range []string{"acme-web", "lux-chain"} {
		if err := bc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	const (
		homeNS = "e2e-fleet"
		opNS   = "e2e-fleet-operator"
		bName  = "e2e-fleet-b"  // acme's registration of B, bounded to acme-web
		oName  = "e2e-fleet-ob" // org other's registration of B
	)
	deleteNamespaceAfter(t, cl, homeNS)
	deleteNamespaceAfter(t, cl, opNS)
	if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	register := func(name, org string, namespaces []string, kubeconfig []byte) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "hanzo.ai/v1", "kind": "Cluster", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"org": org, "endpoint": bCfg.Host, "provider": "testbed"},
		}}
		if len(namespaces) > 0 {
			_ = unstructured.SetNestedStringSlice(u.Object, namespaces, "spec", "namespaces")
		}
		if err := cl.c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.c.Delete(context.Background(), u) })
		setCredential(t, cl, opNS, org, name, kubeconfig)
	}
	good := kubeconfigOf(t, bCfg, "")
	register(bName, "acme", []string{"acme-web"}, good)
	register(oName, "other", []string{"lux-chain"}, good)

	bKey, forged := "acme/"+bName, "acme/"+oName
	repo := newGitRepo(t)
	bDir, forgedDir := "orgs/acme/clusters/"+bName+"/", "orgs/acme/clusters/"+oName+"/"
	web := strings.ReplaceAll(string(must(os.ReadFile("testdata/universe/apps/web.yaml"))), "namespace: demo", "namespace: acme-web")
	sha1, _ := repo.push(t, "two clusters", map[string][]byte{
		"home/namespace.yaml":     []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + homeNS + "\n"),
		"home/cm.yaml":            cmValue(homeNS, "home", "one"),
		bDir + "web/service.yaml": []byte(web),
		bDir + "chain/cm.yaml":    cmValue("lux-chain", "outside", "one"),
		forgedDir + "cm.yaml":     cmValue("lux-chain", "forged", "one"),
	})
	op := startOperator(t, cl, repo, opNS, "--leader-elect=false", "--controllers", "gitops", "--gitops-namespaces", homeNS,
		"--gitops-resync", "10s", "--fleet", "--fleet-allow-non-routable")

	var rep *fleetReport
	waitRow := func(what string, timeout time.Duration, cond func(home *gitops.Report, b *gitops.Report) (bool, string)) {
		t.Helper()
		waitFor(t, what, timeout, func() (bool, string) {
			r, err := op.fleetReport()
			if err != nil {
				return false, err.Error()
			}
			rep = r
			return cond(&r.Report, r.cluster(bKey))
		})
	}
	exists := func(c client.Client, gvkKind, ns, name string) bool {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		if gvkKind == "Service" {
			u.SetAPIVersion("hanzo.ai/v1")
		}
		u.SetKind(gvkKind)
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	t.Run("a CR under cluster B lands on B, not on A", func(t *testing.T) {
		op.reconcileNow(t)
		waitFor(t, "the Service CR on B", time.Minute, func() (bool, string) {
			r, _ := op.fleetReport()
			return exists(bc, "Service", "acme-web", "web"), fmt.Sprintf("%+v", r)
		})
		if exists(cl.c, "Service", "acme-web", "web") {
			t.Errorf("%sweb/service.yaml landed on the home cluster", bDir)
		}
		waitFor(t, "home/cm.yaml on the home cluster", time.Minute, func() (bool, string) {
			return exists(cl.c, "ConfigMap", homeNS, "home"), ""
		})
		if exists(bc, "ConfigMap", homeNS, "home") {
			t.Errorf("home/cm.yaml landed on B")
		}
		waitRow("B's report of "+sha1, time.Minute, func(h, br *gitops.Report) (bool, string) {
			return br != nil && br.Revision == sha1 && h.Cluster == "home", fmt.Sprintf("home %q B %+v", h.Cluster, br)
		})
		for _, res := range rep.cluster(bKey).Results {
			if res.Object.Name == "web" && res.Action != apply.Created && res.Action != apply.InSync && res.Action != apply.Updated {
				t.Errorf("B's row of the Service: %+v", res)
			}
		}
		// status.registered and condition Reached, written by the fleet loop
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("hanzo.ai/v1")
		u.SetKind("Cluster")
		waitFor(t, "status.registered of "+bName, 30*time.Second, func() (bool, string) {
			if err := cl.c.Get(ctx, client.ObjectKey{Name: bName}, u); err != nil {
				return false, err.Error()
			}
			reg, _, _ := unstructured.NestedString(u.Object, "status", "registered")
			return reg != "" && condStatus(u, "Reached") == "True", fmt.Sprint(u.Object["status"])
		})
	})

	t.Run("the bound refuses a namespace outside it, by name", func(t *testing.T) {
		if exists(bc, "ConfigMap", "lux-chain", "outside") {
			t.Fatalf("%schain/cm.yaml was applied outside B's bound", bDir)
		}
		var msg string
		for _, sk := range rep.cluster(bKey).Skips {
			if sk.File == bDir+"chain/cm.yaml" && sk.Reason == gitops.ReasonNamespaceNotOwned {
				msg = sk.Message
			}
		}
		if !strings.Contains(msg, "lux-chain") || !strings.Contains(msg, "bound [acme-web]") || !strings.Contains(msg, bKey) {
			t.Errorf("B's skip of %schain/cm.yaml does not name the namespace, the bound and the cluster: %q", bDir, msg)
		}
	})

	t.Run("org acme cannot reach org other's cluster", func(t *testing.T) {
		if exists(bc, "ConfigMap", "lux-chain", "forged") {
			t.Fatalf("%scm.yaml reached org other's cluster", forgedDir)
		}
		row := rep.cluster(forged)
		if row == nil || !strings.Contains(row.Error, fleet.ErrNoCluster.Error()) || len(row.Results) != 0 {
			t.Errorf("the row of %s: %+v, want %q and nothing applied", forged, row, fleet.ErrNoCluster)
		}
	})

	t.Run("a no-op sweep sends B nothing", func(t *testing.T) {
		before := writesTo(t, bCfg)
		since := time.Now()
		for i := 0; i < 2; i++ {
			waitRow("an idle sweep of B", time.Minute, func(_, br *gitops.Report) (bool, string) {
				return br != nil && br.Idle && br.Started.After(since), fmt.Sprintf("%+v", br)
			})
			since = rep.cluster(bKey).Started
		}
		if after := writesTo(t, bCfg); after != before {
			t.Errorf("two idle sweeps of B sent it %.0f requests for its ConfigMaps and Services, want 0", after-before)
		}
	})

	t.Run("B down: A keeps syncing, B's rows say why, B recovers by itself", func(t *testing.T) {
		if err := b.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		restarted := false
		defer func() {
			if !restarted {
				_ = b.StartAPIServer(ctx)
			}
		}()
		sha2, _ := repo.push(t, "while B is down", map[string][]byte{
			"home/cm.yaml":       cmValue(homeNS, "home", "two"),
			bDir + "web/cm.yaml": cmValue("acme-web", "while-down", "two"),
		})
		op.reconcileNow(t)
		waitFor(t, "home/cm.yaml two on A", time.Minute, func() (bool, string) {
			cm := &corev1.ConfigMap{}
			if err := cl.c.Get(ctx, client.ObjectKey{Namespace: homeNS, Name: "home"}, cm); err != nil {
				return false, err.Error()
			}
			return cm.Data["v"] == "two", cm.Data["v"]
		})
		waitRow("B's row saying why", time.Minute, func(_, br *gitops.Report) (bool, string) {
			if br == nil || br.Revision != sha2 {
				return false, fmt.Sprintf("%+v", br)
			}
			for _, res := range br.Results {
				if res.Object.Name == "while-down" && res.Action == apply.Failed && strings.Contains(res.Message, "connect") {
					t.Logf("B down: %s", res.Message)
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", br.Results)
		})
		if err := b.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		restarted = true
		waitFor(t, "B recovering: the ConfigMap pushed while it was down", time.Minute, func() (bool, string) {
			return exists(bc, "ConfigMap", "acme-web", "while-down"), ""
		})
	})

	t.Run("a credential rotated in its Secret is picked up without a restart", func(t *testing.T) {
		const bad = "e2e-fleet-revoked-token-7c1d"
		noteSecret(bad)
		setCredential(t, cl, opNS, "acme", bName, kubeconfigOf(t, bCfg, bad))
		waitRow("B's row refusing the revoked credential", time.Minute, func(_, br *gitops.Report) (bool, string) {
			return br != nil && strings.Contains(br.Error, "/version") && strings.Contains(br.Error, "credentials"), fmt.Sprintf("%+v", br)
		})
		sha3, _ := repo.push(t, "after the rotation", map[string][]byte{bDir + "web/rotated.yaml": cmValue("acme-web", "rotated", "three")})
		op.reconcileNow(t)
		time.Sleep(2 * time.Second)
		if exists(bc, "ConfigMap", "acme-web", "rotated") {
			t.Fatalf("applied with a revoked credential")
		}
		setCredential(t, cl, opNS, "acme", bName, good)
		waitFor(t, "the ConfigMap of "+sha3+" on B with the rotated credential", time.Minute, func() (bool, string) {
			r, _ := op.fleetReport()
			return exists(bc, "ConfigMap", "acme-web", "rotated"), fmt.Sprintf("%+v", r.cluster(bKey))
		})
		if !op.waitLine(`"cluster":"`+bKey+`"`, `"Created object"`, `rotated`) {
			t.Errorf("the drift log has no line of cluster %s creating the rotated ConfigMap", bKey)
		}
	})
}

// setCredential writes the kubeconfig of org's cluster name to its Secret in the
// operator's namespace: the name is derived from the ref, never chosen.
func setCredential(t *testing.T, cl *cluster, ns, org, name string, kubeconfig []byte) {
	t.Helper()
	ref, err := fleet.RefOf(org, name)
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fleet.SecretName(ref)}}
	_, err = controllerutil.CreateOrUpdate(context.Background(), cl.c, sec, func() error {
		sec.Data = map[string][]byte{fleet.SecretKey: kubeconfig}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writesTo counts the requests B's apiserver served for ConfigMaps and universe Services
// other than lists and watches (the informers' own): every get, apply, create or update.
func writesTo(t *testing.T, cfg *rest.Config) float64 {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || strings.Contains(line, `verb="WATCH"`) || strings.Contains(line, `verb="LIST"`) {
			continue
		}
		if strings.Contains(line, `resource="configmaps"`) || (strings.Contains(line, `resource="services"`) && strings.Contains(line, `group="hanzo.ai"`)) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
				n += v
			}
		}
	}
	return n
}

func condStatus(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return fmt.Sprint(m["status"])
		}
	}
	return ""
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
