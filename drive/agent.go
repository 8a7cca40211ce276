package drive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/source"
)

// Condition reasons of an AgentDeployment besides the peers' failures (the registry's,
// kinds/condition).
const (
	ReasonAgentBound    = condition.ReasonAgentBound
	ReasonAgentNotReady = condition.ReasonAgentNotReady
	ReasonReadOnly      = condition.ReasonReadOnly
)

// Binding statuses of an AgentDeployment.
const (
	BindingPending = "Pending"
	BindingBound   = "Bound"
	BindingError   = "Error"
)

// DefaultExecutionMode is the execution mode of an agent whose spec names none.
const DefaultExecutionMode = "long-running"

// Agent is the cloud API's agent.
type Agent struct {
	ID            string `json:"id,omitempty"`
	Name          string `json:"name"`
	Org           string `json:"org"`
	ExecutionMode string `json:"executionMode,omitempty"`
	Schedule      string `json:"schedule,omitempty"`
	Replicas      *int32 `json:"replicas,omitempty"`
	BotVersion    string `json:"botVersion,omitempty"`
	// Ready is the cloud's verdict; Status (ready, running, …) is read when Ready is absent.
	Ready  bool   `json:"ready,omitempty"`
	Status string `json:"status,omitempty"`
}

// IsReady reports whether the cloud considers the agent ready.
func (a *Agent) IsReady() bool {
	return a.Ready || strings.EqualFold(a.Status, "ready") || strings.EqualFold(a.Status, "running")
}

// Machine is visor's machine.
type Machine struct {
	ID       string `json:"id"`
	Status   string `json:"status,omitempty"`
	Agent    string `json:"agent,omitempty"` // the bound agent's name, empty when unbound
	Org      string `json:"org,omitempty"`
	Provider string `json:"provider,omitempty"`
}

// peer is one JSON HTTP API behind one Authorization header.
type peer struct {
	base  string
	http  *http.Client
	creds []source.Credentials // re-read on 401, scrubbed from errors
}

func newPeer(base, name string, auth Auth) (*peer, error) {
	c, err := newHTTPClient(base, name, auth)
	if err != nil {
		return nil, fmt.Errorf("URL: %w", err)
	}
	var creds []source.Credentials
	for _, c := range []source.Credentials{auth.Bearer, auth.BasicUser, auth.BasicPassword} {
		if !source.NoCredentials(c) {
			creds = append(creds, c)
		}
	}
	return &peer{base: strings.TrimRight(base, "/"), http: c, creds: creds}, nil
}

// call sends method path with body as JSON and decodes a 2xx answer into out. A 404
// returns errNotFound.
func (p *peer) call(ctx context.Context, method, path string, header http.Header, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequestWithContext(ctx, method, p.base+path, rd)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, p.base+path, nil)
	}
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	data, err := do(p.http, req, nil)
	if err != nil {
		for _, c := range p.creds {
			err = c.Token().Scrub(err)
		}
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			return errNotFound
		}
		return fmt.Errorf("%s %s: %w", method, p.base+path, err)
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, p.base+path, err)
	}
	return nil
}

var errNotFound = errors.New("not found")

// Cloud is the cloud API's agents endpoint, with a Bearer token.
type Cloud struct{ p *peer }

// NewCloud returns a cloud client.
func NewCloud(baseURL string, token source.Credentials) (*Cloud, error) {
	p, err := newPeer(baseURL, "the cloud API", Auth{Bearer: token})
	if err != nil {
		return nil, fmt.Errorf("cloud %w", err)
	}
	return &Cloud{p}, nil
}

func orgHeader(org string) http.Header { return http.Header{"X-Org-Id": {org}} }

// GetAgent returns the agent, or nil when the cloud does not know it.
func (c *Cloud) GetAgent(ctx context.Context, org, name string) (*Agent, error) {
	var a Agent
	err := c.p.call(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(name), orgHeader(org), nil, &a)
	if errors.Is(err, errNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// CreateAgent creates the agent.
func (c *Cloud) CreateAgent(ctx context.Context, a Agent) (*Agent, error) {
	var out Agent
	if err := c.p.call(ctx, http.MethodPost, "/v1/agents", orgHeader(a.Org), a, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Visor is visor's machines endpoint, with HTTP Basic (an IAM client id and secret).
type Visor struct{ p *peer }

// NewVisor returns a visor client.
func NewVisor(baseURL string, clientID, clientSecret source.Credentials) (*Visor, error) {
	p, err := newPeer(baseURL, "visor", Auth{BasicUser: clientID, BasicPassword: clientSecret})
	if err != nil {
		return nil, fmt.Errorf("visor %w", err)
	}
	return &Visor{p}, nil
}

// GetMachine returns the machine, or nil when visor does not know it.
func (v *Visor) GetMachine(ctx context.Context, id string) (*Machine, error) {
	var m Machine
	err := v.p.call(ctx, http.MethodGet, "/v1/machines/"+url.PathEscape(id), nil, nil, &m)
	if errors.Is(err, errNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// BindAgent binds the agent to machine id.
func (v *Visor) BindAgent(ctx context.Context, id string, a *Agent) (*Machine, error) {
	var m Machine
	body := map[string]string{"agentId": a.ID, "agent": a.Name, "org": a.Org}
	if err := v.p.call(ctx, http.MethodPost, "/v1/machines/"+url.PathEscape(id)+"/bind-agent", nil, body, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Launch launches a machine at provider for org.
func (v *Visor) Launch(ctx context.Context, provider, org, agent string) (*Machine, error) {
	var m Machine
	body := map[string]string{"provider": provider, "org": org, "agent": agent}
	if err := v.p.call(ctx, http.MethodPost, "/v1/machines", nil, body, &m); err != nil {
		return nil, err
	}
	if m.ID == "" {
		return nil, errors.New("visor launched a machine but answered no id")
	}
	return &m, nil
}

// Agents reconciles AgentDeployments: the agent at the cloud API, the machine through
// visor, as far as Mode and PlanAgent allow. It writes only the CR's status.
type Agents struct {
	Client client.Client
	// Reader reads the AgentDeployment's Namespace with its managedFields (uncached: one
	// read per reconcile); Client when nil.
	Reader client.Reader
	// Tenancy is the one tenancy rule: spec.org must be the Namespace's org, which is the org
	// every call to the cloud and visor names (X-Org-Id, the bodies).
	Tenancy kinds.Tenancy
	// GVK of AgentDeployment in this universe's group.
	GVK   schema.GroupVersionKind
	Mode  AgentMode
	Cloud *Cloud // nil: not configured
	Visor *Visor // nil: not configured
	// Resync re-reads the peers this often (readiness changes outside the cluster).
	Resync time.Duration
	Now    func() time.Time
	Log    logr.Logger
}

// SetupWithManager watches AgentDeployments (spec changes only; status writes are ours).
func (a *Agents) SetupWithManager(mgr ctrl.Manager) error {
	obj := &v1.AgentDeployment{}
	obj.SetGroupVersionKind(a.GVK)
	return ctrl.NewControllerManagedBy(mgr).Named("agentdeployments").
		For(obj, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(a)
}

// Reconcile ensures one AgentDeployment.
func (a *Agents) Reconcile(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
	var ad v1.AgentDeployment
	ad.SetGroupVersionKind(a.GVK)
	if err := a.Client.Get(ctx, req.NamespacedName, &ad); err != nil {
		return crreconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ad.DeletionTimestamp != nil {
		return crreconcile.Result{}, nil
	}
	before := ad.DeepCopy()
	o := a.ensure(ctx, &ad)
	if err := a.writeStatus(ctx, before, &ad, o); err != nil {
		return crreconcile.Result{}, err
	}
	return crreconcile.Result{RequeueAfter: o.verdict.Class.After(a.intervals())}, nil
}

// agentRetry is the wait after a peer failed, and while a bound agent is not ready yet.
const agentRetry = 30 * time.Second

// intervals: a peer's failure and a starting agent are looked at again soon; everything
// else at the resync (what the peers hold wakes nothing); a spec that must change, never.
func (a *Agents) intervals() condition.Intervals {
	resync := a.Resync
	if resync <= 0 {
		resync = 5 * time.Minute
	}
	return condition.Intervals{Retry: agentRetry, Progress: agentRetry, Resync: resync}
}

// agentObservation is what one reconcile found and did, and its verdict (class, reason,
// message), which sets the conditions and the requeue.
type agentObservation struct {
	plan       Plan
	agentReady bool
	machineID  string
	binding    string
	verdict    condition.Verdict
}

// verdict sets o's verdict.
func (o *agentObservation) set(c condition.Class, reason, msg string) {
	o.verdict = condition.Verdict{Class: c, Reason: reason, Message: msg}
}

//nolint:funlen,gocyclo // one branch per AgentDeployment mode and failure, each classified where it arises
func (a *Agents) ensure(ctx context.Context, ad *v1.AgentDeployment) agentObservation {
	machine := ad.Spec.MachineID
	if machine == "" {
		machine = ad.Status.MachineID // an earlier launch: never launch twice
	}
	o := agentObservation{machineID: machine, binding: BindingPending}
	org, err := a.admit(ctx, ad)
	if err != nil {
		// a refusal is Blocked (the Namespace's labels) or Terminal (spec.org); a failed
		// read of the Namespace Transient
		o.binding, o.verdict = BindingError, condition.Of(err)
		a.Log.Info("agent deployment not admitted; nothing sent", "agentDeployment", ad.Namespace+"/"+ad.Name, "reason", o.verdict.Reason, "class", o.verdict.Class)
		return o
	}
	o.plan = PlanAgent(a.Mode, a.Cloud != nil && a.Visor != nil, AgentTarget{MachineID: machine, Provider: ad.Spec.Provider})
	log := a.Log.WithValues("agentDeployment", ad.Namespace+"/"+ad.Name, "plan", o.plan.Provision)
	fail := func(reason string, err error) agentObservation {
		o.set(condition.Transient, reason, err.Error())
		if o.binding != BindingBound {
			o.binding = BindingError
		}
		log.Error(err, "agent deployment step failed", "reason", reason)
		return o
	}
	if a.Cloud == nil {
		o.set(condition.Idle, ReasonReadOnly, o.plan.Reason)
		return o
	}
	agent, err := a.Cloud.GetAgent(ctx, org, ad.Spec.AgentName)
	if err != nil {
		return fail(condition.ReasonCloudError, err)
	}
	if agent == nil && o.plan.MayCreateAgent() {
		mode := ad.Spec.ExecutionMode
		if mode == "" {
			mode = DefaultExecutionMode
		}
		agent, err = a.Cloud.CreateAgent(ctx, Agent{Name: ad.Spec.AgentName, Org: org, ExecutionMode: mode,
			Schedule: ad.Spec.Schedule, Replicas: ad.Spec.Replicas, BotVersion: ad.Spec.BotVersion})
		if err != nil {
			return fail(condition.ReasonCloudError, err)
		}
		log.Info("agent created at the cloud API", "agent", ad.Spec.AgentName, "executionMode", mode)
	}
	if agent != nil {
		o.agentReady = agent.IsReady()
	}
	if a.Visor != nil && machine != "" {
		m, err := a.Visor.GetMachine(ctx, machine)
		if err != nil {
			return fail(condition.ReasonVisorError, err)
		}
		if m != nil && m.Agent == ad.Spec.AgentName && strings.EqualFold(m.Status, "bound") {
			o.binding = BindingBound
		}
		if m == nil && o.plan.Provision == ProvisionBindExisting {
			o.binding = BindingError
			o.set(condition.Blocked, condition.ReasonMachineNotFound, fmt.Sprintf("visor knows no machine %s", machine))
			return o
		}
		if m != nil && m.Agent != "" && m.Agent != ad.Spec.AgentName {
			o.binding = BindingError
			o.set(condition.Blocked, condition.ReasonMachineTaken, fmt.Sprintf("machine %s is bound to agent %s; not rebinding it", machine, m.Agent))
			return o
		}
	}
	switch o.plan.Provision {
	case ProvisionReadOnly, ProvisionNoTarget:
		msg := o.plan.Reason
		if agent == nil {
			msg += "; the cloud API knows no agent " + ad.Spec.AgentName
		}
		o.set(condition.Idle, string(o.plan.Provision), msg)
		return o
	case ProvisionLaunchThenBind:
		m, err := a.Visor.Launch(ctx, ad.Spec.Provider, org, ad.Spec.AgentName)
		if err != nil {
			return fail(condition.ReasonLaunchFailed, err)
		}
		o.machineID = m.ID
		log.Info("machine launched", "machine", m.ID, "provider", ad.Spec.Provider)
		// record the machine before binding, so a failed bind never launches a second one
		ad.Status.MachineID = m.ID
		if err := a.applyStatus(ctx, ad, &ad.Status); err != nil {
			return fail(condition.ReasonStatusWriteFailed, fmt.Errorf("record launched machine %s: %w", m.ID, err))
		}
	}
	if o.binding != BindingBound {
		bind := *agent
		bind.Org = org // the Namespace's, whatever the cloud answered
		if _, err := a.Visor.BindAgent(ctx, o.machineID, &bind); err != nil {
			return fail(condition.ReasonBindFailed, err)
		}
		log.Info("agent bound to machine", "machine", o.machineID)
		o.binding = BindingBound
	}
	msg := fmt.Sprintf("agent %s bound to machine %s", ad.Spec.AgentName, o.machineID)
	if !o.agentReady {
		o.set(condition.Progressing, ReasonAgentNotReady, msg+"; the agent is not ready yet")
		return o
	}
	o.set(condition.Ready, ReasonAgentBound, msg)
	return o
}

// admit applies the tenancy rule: the AgentDeployment's spec.org must be its Namespace's
// org (set by a trusted manager); the org returned is the Namespace's.
func (a *Agents) admit(ctx context.Context, ad *v1.AgentDeployment) (string, error) {
	r := a.Reader
	if r == nil {
		r = a.Client
	}
	var ns corev1.Namespace
	if err := r.Get(ctx, types.NamespacedName{Name: ad.Namespace}, &ns); err != nil {
		return "", condition.TransientError(condition.ReasonNamespaceUnreadable, fmt.Errorf("read Namespace %s for its org: %w", ad.Namespace, err))
	}
	if err := kinds.ValidOrg(ad.Spec.Org); err != nil {
		return "", condition.TerminalError(kinds.ReasonInvalidOrg, fmt.Errorf("spec.org: %w", err))
	}
	return a.Tenancy.AdmitOrg(ad, &ns, ad.Spec.Org)
}

// AgentPhase is Running only when the agent is ready and bound; Degraded on a binding
// error; Pending otherwise. It is pure.
func AgentPhase(agentReady bool, binding string) v1.Phase {
	switch {
	case agentReady && binding == BindingBound:
		return v1.PhaseRunning
	case binding == BindingError:
		return v1.PhaseDegraded
	default:
		return v1.PhasePending
	}
}

// writeStatus writes the status o decides (agentStatus), once, when it changed.
func (a *Agents) writeStatus(ctx context.Context, before, ad *v1.AgentDeployment, o agentObservation) error {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	st := agentStatus(ad.Status, ad.Generation, o, now())
	if equality.Semantic.DeepEqual(before.Status, st) {
		return nil
	}
	return a.applyStatus(ctx, before, &st)
}

// agentStatus is the status after an observation: the phase, the binding, and the
// conditions of o's verdict (condition.Verdict.Conditions). It is pure.
func agentStatus(prev v1.AgentDeploymentStatus, generation int64, o agentObservation, now time.Time) v1.AgentDeploymentStatus {
	st := *prev.DeepCopy()
	st.Phase = AgentPhase(o.agentReady, o.binding)
	st.ObservedGeneration = generation
	st.AgentReady = o.agentReady
	st.MachineID = o.machineID
	st.BindingStatus = o.binding
	v := o.verdict
	if len(v.Message) > 256 {
		v.Message = v.Message[:256]
	}
	st.Message = v.Message
	st.Conditions = v.Conditions(st.Conditions, generation, metav1.NewTime(now))
	return st
}

// applyStatus applies st as the status of ad: server-side apply of the status subresource
// under condition.ManagerStatus, which owns the conditions it writes. A condition an earlier
// release's update wrote, and that st drops, is removed first (condition.DropPatch).
func (a *Agents) applyStatus(ctx context.Context, ad *v1.AgentDeployment, st *v1.AgentDeploymentStatus) error {
	if len(condition.LegacyStatusManagers(ad)) > 0 {
		drop, err := condition.DropPatch(ad.Status.Conditions, st.Conditions)
		if err != nil {
			return err
		}
		if drop != nil {
			if err := a.Client.Status().Patch(ctx, ad.DeepCopy(), client.RawPatch(types.JSONPatchType, drop), client.FieldOwner(condition.ManagerStatus)); err != nil {
				return client.IgnoreNotFound(fmt.Errorf("drop conditions of %s/%s: %w", ad.Namespace, ad.Name, err))
			}
		}
	}
	patch, err := condition.StatusApply(a.GVK, ad, st)
	if err != nil {
		return err
	}
	err = a.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(patch), client.FieldOwner(condition.ManagerStatus), client.ForceOwnership)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("apply status of %s/%s: %w", ad.Namespace, ad.Name, err)
	}
	return nil
}
