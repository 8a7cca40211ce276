package gitops

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
)

// newTestSweeper returns a sweeper over src whose apiserver requests are
// counted, and an admin client that is not.
func newTestSweeper(t testing.TB, src source.Source, namespaces ...string) (*Sweeper, *requests, client.Client) {
	t.Helper()
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := &requests{}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = reqs.wrap
	scope, err := NewScope(namespaces, nil)
	if err != nil {
		t.Fatal(err)
	}
	scope = scope.WithCRDs(true) // the fixtures declare their CRDs
	sw, err := NewSweeper(counted, src, scope, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	return sw, reqs, admin
}

func widget(ns string, i int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("test.openuniverse.dev/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(strings.TrimSuffix(strings.TrimPrefix(widgetPath(i), "crs/widgets/"), ".yaml"))
	return u
}

// TestSweepIsFreeWhenIdle: over 1000 custom resources, a cold sweep sends one
// apply per object; a sweep with nothing changed sends nothing; ten changed
// files cost ten requests; an out-of-band edit or delete fires the trigger
// and costs one request, and a status write costs nothing.
func TestSweepIsFreeWhenIdle(t *testing.T) {
	const ns, n, cms = "idle-test", 1000, 5
	src := newMemSource(fixture(ns, n, cms))
	sw, reqs, admin := newTestSweeper(t, src, All)
	sink := &logSink{}
	ctx := logr.NewContext(context.Background(), sink.logger())
	objects := n + cms + 2 // and the CRD and the Namespace

	sweep := func(step string) (Report, map[string]int) {
		t.Helper()
		reqs.take()
		r := sw.Sweep(ctx)
		got := reqs.take()
		t.Logf("%s: %+v in %.2fs, requests %v", step, r.Summary, r.Duration, got)
		if r.Error != "" {
			t.Fatalf("%s: %s", step, r.Error)
		}
		return r, got
	}
	idle := func(step string) {
		t.Helper()
		src.calls()
		r, got := sweep(step)
		if heads, snaps := src.calls(); heads != 1 || snaps != 0 {
			t.Errorf("%s: %d Head and %d Snapshot calls, want only one Head", step, heads, snaps)
		}
		if len(got) != 0 || !r.Idle || r.Summary.InSync != objects {
			t.Errorf("%s: %d requests %v, idle %v, %d in sync; want 0 requests and all %d in sync", step, total(got), got, r.Idle, r.Summary.InSync, objects)
		}
	}
	drain := func() {
		select {
		case <-sw.Trigger().C():
		default:
		}
	}
	fired := func(step string, want bool) {
		t.Helper()
		wait := 10 * time.Second
		if !want {
			wait = time.Second
		}
		select {
		case <-sw.Trigger().C():
			if !want {
				t.Errorf("%s fired the trigger", step)
			}
		case <-time.After(wait):
			if want {
				t.Errorf("%s did not fire the trigger within %s", step, wait)
			}
		}
	}

	// Cold: one apply per object, plus discovery and one list and watch per kind.
	r, got := sweep("cold sweep")
	if r.Summary.Created+r.Summary.InSync != objects || r.Summary.Errors+r.Summary.Denied != 0 {
		t.Fatalf("cold sweep: %+v, want %d created", r.Summary, objects)
	}
	if a := sumVerb(got, "APPLY"); a != objects {
		t.Errorf("cold sweep sent %d applies, want one per object (%d)", a, objects)
	}
	if other := total(got) - objects; other > 30 {
		t.Errorf("cold sweep sent %d requests besides the applies, want at most 30: %v", other, got)
	}
	idle("idle sweep after the cold sweep")

	// Ten changed files: ten requests.
	changes := map[string][]byte{}
	for i := range 10 {
		changes[widgetPath(i*97)] = widgetFile(ns, i*97, 2)
	}
	src.commit(changes)
	r, got = sweep("ten changed files")
	if total(got) != 10 || sumVerb(got, "APPLY") != 10 || r.Summary.Updated != 10 || r.Summary.Refetched != 10 {
		t.Errorf("ten changed files: %d requests %v, %+v; want 10 applies, 10 updated, 10 refetched", total(got), got, r.Summary)
	}
	idle("idle sweep after ten changed files")

	// An out-of-band spec edit is seen by the watch, fires the trigger and is reverted.
	drain()
	edited := widget(ns, 500)
	if err := admin.Patch(ctx, edited, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"size":99}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	fired("an out-of-band edit", true)
	r, got = sweep("correction")
	want := apply.Result{Object: apply.RefOf(edited), Action: apply.Updated, DriftedBy: []string{"kubectl-edit"}}
	if total(got) != 1 || r.Summary.Updated != 1 || !containsResult(r.Results, want) {
		t.Errorf("correction: %d requests %v, %+v; want one apply reverting kubectl-edit", total(got), got, r.Summary)
	}
	live := widget(ns, 500)
	if err := admin.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(live.Object, "spec", "size"); size != 1 {
		t.Errorf("spec.size after the correction = %d, want 1", size)
	}
	if !strings.Contains(sink.all(), `"msg"="Reverted drift"`) || !strings.Contains(sink.all(), `"driftedBy"=["kubectl-edit"]`) {
		t.Errorf("no drift line naming kubectl-edit in the log")
	}
	idle("idle sweep after the correction")

	// A status write (a controller reporting) changes nothing the sweep applies.
	drain()
	if err := admin.Status().Patch(ctx, widget(ns, 600), client.RawPatch(types.MergePatchType, []byte(`{"status":{"ready":true}}`)), client.FieldOwner("universe-operator")); err != nil {
		t.Fatal(err)
	}
	fired("a status write", false)
	idle("idle sweep after a status write")

	// A ConfigMap (no generation) edited out of band.
	drain()
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(ns)
	cm.SetName("cm-2")
	if err := admin.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"edited"}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	fired("a ConfigMap edit", true)
	if r, got = sweep("ConfigMap correction"); total(got) != 1 || r.Summary.Updated != 1 {
		t.Errorf("ConfigMap correction: %v, %+v; want one apply, one update", got, r.Summary)
	}

	// An out-of-band delete is recreated.
	drain()
	if err := admin.Delete(ctx, widget(ns, 700)); err != nil {
		t.Fatal(err)
	}
	fired("an out-of-band delete", true)
	if r, got = sweep("recreate"); total(got) != 1 || r.Summary.Created != 1 {
		t.Errorf("recreate: %v, %+v; want one apply, one create", got, r.Summary)
	}
	idle("final idle sweep")

	// Every sweep was counted, idle ones apart.
	if idle, applied := testutil.ToFloat64(metricSweeps.WithLabelValues("idle")), testutil.ToFloat64(metricSweeps.WithLabelValues("applied")); idle < 5 || applied < 5 {
		t.Errorf("sweeps counted: %v idle, %v applied; want at least 5 and 5", idle, applied)
	}
	if n := testutil.ToFloat64(metricDrift.WithLabelValues("kubectl")); n < 2 { // every kubectl flavour is one label value
		t.Errorf("drift reverted from kubectl-edit counted %v times, want at least 2", n)
	}

	// GET /gitops serves the last report.
	rec := httptest.NewRecorder()
	sw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/gitops", nil))
	var served Report
	if err := json.Unmarshal(rec.Body.Bytes(), &served); err != nil {
		t.Fatalf("GET /gitops: %v: %s", err, rec.Body.String())
	}
	if diff := cmp.Diff(sw.Last().Summary, served.Summary); diff != "" || served.Revision == "" || len(served.Results) != objects {
		t.Errorf("GET /gitops: revision %q, %d results, summary (-want +got):\n%s", served.Revision, len(served.Results), diff)
	}
}

func containsResult(rs []apply.Result, want apply.Result) bool {
	for _, r := range rs {
		r.Err = nil
		r.Health, r.HealthMessage = "", "" // TestSweepHealth checks health
		if cmp.Equal(r, want, cmpopts.EquateEmpty()) {
			return true
		}
	}
	return false
}
