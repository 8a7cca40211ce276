package drive_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/source"
)

// peers are httptest cloud and visor servers speaking the agents and machines shapes;
// each checks that exactly one Authorization header of its scheme arrives.
type peers struct {
	mu       sync.Mutex
	calls    []string
	bad      []string
	agents   map[string]drive.Agent
	machines map[string]drive.Machine
	launched int
	cloud    *httptest.Server
	visor    *httptest.Server
}

func newPeers(t *testing.T) *peers {
	p := &peers{agents: map[string]drive.Agent{}, machines: map[string]drive.Machine{}}
	check := func(r *http.Request, want string) bool {
		got := r.Header.Values("Authorization")
		if len(got) != 1 || got[0] != want {
			p.bad = append(p.bad, fmt.Sprintf("%s %s: Authorization %q", r.Method, r.URL.Path, got))
			return false
		}
		return true
	}
	p.cloud = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls = append(p.calls, "cloud "+r.Method+" "+r.URL.Path)
		if !check(r, "Bearer cl0ud-token") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		org := r.Header.Get("X-Org-Id")
		switch {
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/agents/"):
			a, ok := p.agents[org+"/"+strings.TrimPrefix(r.URL.Path, "/v1/agents/")]
			if !ok {
				http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
				return
			}
			_ = json.NewEncoder(w).Encode(a)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/agents":
			var a drive.Agent
			if err := json.NewDecoder(r.Body).Decode(&a); err != nil || a.Org != org || a.Name == "" {
				http.Error(w, "bad agent", http.StatusBadRequest)
				return
			}
			a.ID, a.Status = "agt-"+a.Name, "ready"
			p.agents[org+"/"+a.Name] = a
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(a)
		default:
			http.NotFound(w, r)
		}
	}))
	p.visor = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls = append(p.calls, "visor "+r.Method+" "+r.URL.Path)
		if !check(r, "Basic aWFtLWNsaWVudDppYW0tczNjcjN0") { // iam-client:iam-s3cr3t
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		path := strings.TrimPrefix(r.URL.Path, "/v1/machines")
		switch {
		case r.Method == http.MethodPost && path == "":
			var body map[string]string
			_ = json.NewDecoder(r.Body).Decode(&body)
			p.launched++
			m := drive.Machine{ID: fmt.Sprintf("launched-%d", p.launched), Status: "running", Provider: body["provider"], Org: body["org"]}
			p.machines[m.ID] = m
			_ = json.NewEncoder(w).Encode(m)
		case r.Method == http.MethodPost && strings.HasSuffix(path, "/bind-agent"):
			id := strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/bind-agent")
			m, ok := p.machines[id]
			var body map[string]string
			_ = json.NewDecoder(r.Body).Decode(&body)
			if !ok || body["agent"] == "" {
				http.Error(w, "no such machine", http.StatusNotFound)
				return
			}
			m.Agent, m.Status = body["agent"], "bound"
			p.machines[id] = m
			_ = json.NewEncoder(w).Encode(m)
		case r.Method == http.MethodGet:
			m, ok := p.machines[strings.TrimPrefix(path, "/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			_ = json.NewEncoder(w).Encode(m)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { p.cloud.Close(); p.visor.Close() })
	return p
}

func (p *peers) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls
	p.calls = nil
	return c
}

func secretFile(t *testing.T, name, value string) *source.TokenFile {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

func TestAgentDeploymentModes(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx := context.Background()
	orgNamespace(t, c, "agents", "hanzo", "cloud-api")
	p := newPeers(t)
	p.machines["m-free"] = drive.Machine{ID: "m-free", Status: "running"}
	p.machines["m-taken"] = drive.Machine{ID: "m-taken", Status: "bound", Agent: "someone-else"}
	cloud, err := drive.NewCloud(p.cloud.URL, secretFile(t, "cloud", "cl0ud-token"))
	if err != nil {
		t.Fatal(err)
	}
	visor, err := drive.NewVisor(p.visor.URL, secretFile(t, "id", "iam-client"), secretFile(t, "secret", "iam-s3cr3t"))
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: group, Version: v1.Version, Kind: "AgentDeployment"}
	reconciler := func(mode drive.AgentMode, configured bool) *drive.Agents {
		a := &drive.Agents{Client: c, GVK: gvk, Mode: mode, Log: testr.New(t)}
		if configured {
			a.Cloud, a.Visor = cloud, visor
		}
		return a
	}
	create := func(name string, spec v1.AgentDeploymentSpec) {
		t.Helper()
		ad := &v1.AgentDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agents"}, Spec: spec}
		ad.SetGroupVersionKind(gvk)
		if err := c.Create(ctx, ad); err != nil {
			t.Fatal(err)
		}
	}
	reconcile := func(a *drive.Agents, name string) v1.AgentDeploymentStatus {
		t.Helper()
		if _, err := a.Reconcile(ctx, crreconcile.Request{NamespacedName: types.NamespacedName{Namespace: "agents", Name: name}}); err != nil {
			t.Fatal(err)
		}
		ad := &v1.AgentDeployment{}
		ad.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, client.ObjectKey{Namespace: "agents", Name: name}, ad); err != nil {
			t.Fatal(err)
		}
		if ad.Status.ObservedGeneration != ad.Generation {
			t.Errorf("%s: observedGeneration %d, generation %d", name, ad.Status.ObservedGeneration, ad.Generation)
		}
		for _, mf := range ad.ManagedFields { // the status is applied, by the status manager only
			if mf.Subresource == "status" && (mf.Manager != condition.ManagerStatus || mf.Operation != metav1.ManagedFieldsOperationApply) {
				t.Errorf("%s: status written by %s (%s), want only %s applying", name, mf.Manager, mf.Operation, condition.ManagerStatus)
			}
		}
		return ad.Status
	}
	summary := func(s v1.AgentDeploymentStatus) string {
		ready := ""
		for _, c := range s.Conditions {
			if c.Type == "Ready" {
				ready = string(c.Status) + "/" + c.Reason
			}
		}
		return fmt.Sprintf("%s %s machine=%s agentReady=%v Ready=%s", s.Phase, s.BindingStatus, s.MachineID, s.AgentReady, ready)
	}
	noWrites := func(calls []string) {
		t.Helper()
		for _, c := range calls {
			if strings.Contains(c, " POST ") {
				t.Errorf("a read-only reconcile wrote: %s", c)
			}
		}
	}

	t.Run("unconfigured is read-only and calls nothing, even when on", func(t *testing.T) {
		create("unconfigured", v1.AgentDeploymentSpec{AgentName: "bot-u", Org: "hanzo", MachineID: "m-free"})
		s := reconcile(reconciler(drive.AgentModeOn, false), "unconfigured")
		if got := summary(s); got != "Pending Pending machine=m-free agentReady=false Ready=False/ReadOnly" {
			t.Errorf("status = %s", got)
		}
		if calls := p.take(); len(calls) != 0 {
			t.Errorf("calls = %v", calls)
		}
	})
	t.Run("off only reports", func(t *testing.T) {
		create("off", v1.AgentDeploymentSpec{AgentName: "bot-off", Org: "hanzo", MachineID: "m-free"})
		s := reconcile(reconciler(drive.AgentModeOff, true), "off")
		if got := summary(s); got != "Pending Pending machine=m-free agentReady=false Ready=False/ReadOnly" {
			t.Errorf("status = %s", got)
		}
		noWrites(p.take())
	})
	t.Run("bind-only creates the agent and binds the named machine", func(t *testing.T) {
		create("bind", v1.AgentDeploymentSpec{AgentName: "bot-b", Org: "hanzo", MachineID: "m-free", Provider: "aws"})
		s := reconcile(reconciler(drive.AgentModeBindOnly, true), "bind")
		if got := summary(s); got != "Running Bound machine=m-free agentReady=true Ready=True/Bound" {
			t.Errorf("status = %s", got)
		}
		want := "cloud GET /v1/agents/bot-b,cloud POST /v1/agents,visor GET /v1/machines/m-free,visor POST /v1/machines/m-free/bind-agent"
		if got := strings.Join(p.take(), ","); got != want {
			t.Errorf("calls = %s\nwant    %s", got, want)
		}
		if a := p.agents["hanzo/bot-b"]; a.ExecutionMode != drive.DefaultExecutionMode {
			t.Errorf("agent created with execution mode %q", a.ExecutionMode)
		}
		// bound already: the next reconcile only reads
		reconcile(reconciler(drive.AgentModeBindOnly, true), "bind")
		noWrites(p.take())
	})
	t.Run("bind-only never launches", func(t *testing.T) {
		create("nolaunch", v1.AgentDeploymentSpec{AgentName: "bot-n", Org: "hanzo", Provider: "aws", ExecutionMode: "scheduled", Schedule: "0 * * * *"})
		s := reconcile(reconciler(drive.AgentModeBindOnly, true), "nolaunch")
		if got := summary(s); got != "Pending Pending machine= agentReady=true Ready=False/NoTarget" {
			t.Errorf("status = %s", got)
		}
		for _, c := range p.take() {
			if strings.HasPrefix(c, "visor POST /v1/machines") {
				t.Errorf("bind-only launched: %s", c)
			}
		}
		if p.launched != 0 {
			t.Errorf("launched %d machines", p.launched)
		}
		if a := p.agents["hanzo/bot-n"]; a.ExecutionMode != "scheduled" || a.Schedule != "0 * * * *" {
			t.Errorf("agent = %+v", a)
		}
	})
	t.Run("on launches once, then binds", func(t *testing.T) {
		create("launch", v1.AgentDeploymentSpec{AgentName: "bot-l", Org: "hanzo", Provider: "aws"})
		s := reconcile(reconciler(drive.AgentModeOn, true), "launch")
		if got := summary(s); got != "Running Bound machine=launched-1 agentReady=true Ready=True/Bound" {
			t.Errorf("status = %s", got)
		}
		want := "cloud GET /v1/agents/bot-l,cloud POST /v1/agents,visor POST /v1/machines,visor POST /v1/machines/launched-1/bind-agent"
		if got := strings.Join(p.take(), ","); got != want {
			t.Errorf("calls = %s\nwant    %s", got, want)
		}
		reconcile(reconciler(drive.AgentModeOn, true), "launch")
		noWrites(p.take())
		if p.launched != 1 {
			t.Errorf("launched %d machines, want 1", p.launched)
		}
	})
	t.Run("machineId wins over provider when on", func(t *testing.T) {
		p.machines["m-two"] = drive.Machine{ID: "m-two", Status: "running"}
		create("wins", v1.AgentDeploymentSpec{AgentName: "bot-w", Org: "hanzo", Provider: "aws", MachineID: "m-two"})
		s := reconcile(reconciler(drive.AgentModeOn, true), "wins")
		if s.BindingStatus != drive.BindingBound || s.MachineID != "m-two" || p.launched != 1 {
			t.Errorf("status %s, launched %d", summary(s), p.launched)
		}
		p.take()
	})
	t.Run("a machine bound to another agent is not taken", func(t *testing.T) {
		create("taken", v1.AgentDeploymentSpec{AgentName: "bot-t", Org: "hanzo", MachineID: "m-taken"})
		s := reconcile(reconciler(drive.AgentModeOn, true), "taken")
		if got := summary(s); got != "Degraded Error machine=m-taken agentReady=true Ready=False/MachineTaken" {
			t.Errorf("status = %s", got)
		}
		if !meta.IsStatusConditionTrue(s.Conditions, condition.TypeStalled) {
			t.Errorf("a taken machine is not Stalled: %+v", s.Conditions)
		}
		for _, c := range p.take() {
			if strings.Contains(c, "bind-agent") {
				t.Errorf("rebound a taken machine: %s", c)
			}
		}
	})
	if len(p.bad) > 0 {
		t.Errorf("requests without exactly one correct Authorization header: %v", p.bad)
	}
}

// TestAgentDeploymentOrgIsItsNamespaces is the attack on the AgentDeployment loop: a CR in
// org hanzo's namespace names spec.org orgb (or sits in a namespace whose org label a tenant
// wrote itself); nothing is sent to the cloud or visor with the fleet's credentials, and the
// Ready condition names the refusal. An admitted CR's calls carry its namespace's org.
func TestAgentDeploymentOrgIsItsNamespaces(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx := context.Background()
	orgNamespace(t, c, "agents-a", "hanzo", "cloud-api")
	orgNamespace(t, c, "agents-self", "orgb", "kubectl-label")
	p := newPeers(t)
	p.machines["m-1"] = drive.Machine{ID: "m-1", Status: "running"}
	cloud, err := drive.NewCloud(p.cloud.URL, secretFile(t, "cloud", "cl0ud-token"))
	if err != nil {
		t.Fatal(err)
	}
	visor, err := drive.NewVisor(p.visor.URL, secretFile(t, "id", "iam-client"), secretFile(t, "secret", "iam-s3cr3t"))
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: group, Version: v1.Version, Kind: "AgentDeployment"}
	a := &drive.Agents{Client: c, GVK: gvk, Mode: drive.AgentModeOn, Cloud: cloud, Visor: visor, Log: testr.New(t)}
	ready := func(ns, name string, spec v1.AgentDeploymentSpec) (v1.AgentDeploymentStatus, string) {
		t.Helper()
		ad := &v1.AgentDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
		ad.SetGroupVersionKind(gvk)
		if err := c.Create(ctx, ad); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Reconcile(ctx, crreconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ad), ad); err != nil {
			t.Fatal(err)
		}
		for _, cond := range ad.Status.Conditions {
			if cond.Type == "Ready" {
				return ad.Status, string(cond.Status) + "/" + cond.Reason
			}
		}
		return ad.Status, ""
	}
	for _, tc := range []struct{ ns, name, org, want string }{
		{"agents-a", "steal", "orgb", "False/" + kinds.ReasonOrgMismatch},
		{"agents-self", "self", "orgb", "False/" + kinds.ReasonNamespaceHasNoOrg},
	} {
		st, got := ready(tc.ns, tc.name, v1.AgentDeploymentSpec{AgentName: "bot-" + tc.name, Org: tc.org, MachineID: "m-1", Provider: "aws"})
		if got != tc.want || st.Phase != v1.PhaseDegraded || !strings.Contains(st.Message, strings.TrimPrefix(tc.want, "False/")) {
			t.Errorf("%s/%s: Ready %s, phase %s, message %q; want %s", tc.ns, tc.name, got, st.Phase, st.Message, tc.want)
		}
		if calls := p.take(); len(calls) != 0 {
			t.Errorf("%s/%s refused but sent %v", tc.ns, tc.name, calls)
		}
	}
	if p.launched != 0 || len(p.agents) != 0 {
		t.Errorf("refused CRs launched %d machines, created agents %v", p.launched, p.agents)
	}
	if _, got := ready("agents-a", "own", v1.AgentDeploymentSpec{AgentName: "bot-own", Org: "hanzo", MachineID: "m-1"}); got != "True/Bound" {
		t.Errorf("own org: Ready %s", got)
	}
	if _, ok := p.agents["hanzo/bot-own"]; !ok { // the fake keys agents by X-Org-Id and refuses a body of another org
		t.Errorf("the admitted agent was not created under X-Org-Id hanzo: %v", p.agents)
	}
	if len(p.bad) > 0 {
		t.Errorf("requests without exactly one correct Authorization header: %v", p.bad)
	}
}
