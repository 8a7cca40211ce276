package deploy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds"
)

// The annotations the plane writes on a CR and reads back: the sync request (a changed
// annotation makes the Kind controller reconcile) and who asked.
const (
	AnnotationSyncRequestedAt = "deploy.openuniverse.dev/sync-requested-at"
	AnnotationSyncInitiatedBy = "deploy.openuniverse.dev/sync-initiated-by"
	// AnnotationResource names the CR an application stands for (group/version/Kind).
	AnnotationResource = "deploy.openuniverse.dev/resource"
)

// InClusterServer is the destination server of every application: the cluster the plane runs in.
const InClusterServer = "https://kubernetes.default.svc"

// InfoAutomation is the spec.info entry that says what applies an application.
const InfoAutomation = "Automation"

// DefaultProject is the project of an application without an org label.
const DefaultProject = "default"

// GitRecord is what the git sweep knows of a CR it applied.
type GitRecord struct {
	RepoURL, Branch, File string
	// Revision is the commit the last sweep read.
	Revision string
	// Action is the sweep's outcome for this CR: Created, Updated, InSync, Failed, Denied.
	Action  string
	Message string
}

// Observed is what the shell read from the caches for one application.
type Observed struct {
	// Name is the application name (the CR name, qualified with the kind when two CRs of one
	// namespace share it).
	Name string
	CR   *unstructured.Unstructured
	// Desired are the children the builder produces for this CR (identity only matters).
	Desired []*unstructured.Unstructured
	// BuildErr is set when the CR cannot be built; Halted when it deliberately builds nothing.
	BuildErr string
	Halted   bool
	// Children are the live objects the CR controls, Secrets excluded.
	Children []*unstructured.Unstructured
	// Descendants are the Pods and ReplicaSets under the children, for the tree.
	Descendants []*unstructured.Unstructured
	// Git is set when the CR came from the git sweep.
	Git *GitRecord
	// Org is the application's org: its namespace's, by kinds.Tenancy ("" for none). A CR the
	// rule refuses (its own org label differs from its namespace's) has no org, so no member
	// sees it, and Tenancy says why (admins see it as an InvalidSpecError condition).
	Org     string
	Tenancy *kinds.TenancyError
}

// ProjectOptions are the fixed facts every projection shares.
type ProjectOptions struct {
	ControllerNamespace string
}

// refKey identifies an object without its version.
func refKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

func keyOf(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	return refKey(gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName())
}

// IsSecret reports whether gvk is a core Secret, which the plane never surfaces.
func IsSecret(gvk schema.GroupVersionKind) bool { return gvk.Group == "" && gvk.Kind == "Secret" }

// ProjectOf is the project of an application of org: the org, else DefaultProject.
func ProjectOf(org string) string {
	if org != "" {
		return org
	}
	return DefaultProject
}

// Project builds the Application the plane serves for one observed CR. It is pure.
//
//nolint:funlen,gocyclo // one branch per Argo CD field it fills
func Project(o Observed, opts ProjectOptions) Application {
	cr := o.CR
	gvk := cr.GroupVersionKind()
	app := Application{TypeMeta: metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Application"}}
	app.Name, app.Namespace = o.Name, cr.GetNamespace()
	app.UID, app.Generation, app.CreationTimestamp = cr.GetUID(), cr.GetGeneration(), cr.GetCreationTimestamp()
	app.DeletionTimestamp = cr.GetDeletionTimestamp()
	app.ResourceVersion = maxResourceVersion(cr, o.Children, o.Descendants)
	app.Labels = cr.GetLabels()
	ann := map[string]string{}
	for k, v := range cr.GetAnnotations() {
		if k != "kubectl.kubernetes.io/last-applied-configuration" {
			ann[k] = v
		}
	}
	ann[AnnotationResource] = gvk.GroupVersion().String() + "/" + gvk.Kind
	app.Annotations = ann

	src := &ApplicationSource{Path: gvk.Kind + "/" + cr.GetNamespace() + "/" + cr.GetName()}
	// No spec.syncPolicy.automated: in Argo CD it is a per-application switch the controller
	// honours (and a rollback needs off); here nothing can switch an application's automation
	// off — the git sweep applies every commit, the Kind controller every change of the CR —
	// and a rollback changes the source itself, so it never needs it off. spec.info says
	// what applies the application instead.
	automation := "the Kind controller applies every change of the CR"
	if g := o.Git; g != nil {
		src = &ApplicationSource{RepoURL: g.RepoURL, Path: g.File, TargetRevision: g.Branch}
		automation = "the git sweep applies every commit (a rollback is a commit); the Kind controller every change of the CR"
	}
	dest := ApplicationDestination{Server: InClusterServer, Namespace: cr.GetNamespace(), Name: "in-cluster"}
	app.Spec = ApplicationSpec{Source: src, Destination: dest, Project: ProjectOf(o.Org),
		Info: []Info{{Name: "Resource", Value: gvk.GroupVersion().String() + " " + gvk.Kind}, {Name: InfoAutomation, Value: automation}}}
	if img := crImage(cr); img != "" {
		app.Spec.Info = append(app.Spec.Info, Info{Name: "Image", Value: img})
	}
	if site, _, _ := unstructured.NestedString(cr.Object, "spec", "configMap"); gvk.Kind == "Static" && site != "" {
		app.Spec.Info = append(app.Spec.Info, Info{Name: "Site", Value: "ConfigMap " + site})
	}

	st := &app.Status
	st.ControllerNamespace = opts.ControllerNamespace
	st.SourceType = "Directory"
	conds := crConditions(cr)
	live := map[string]*unstructured.Unstructured{}
	for _, c := range o.Children {
		live[keyOf(c)] = c
	}
	missing, inTree := 0, map[string]bool{}
	var worst *HealthStatus
	consider := func(h *HealthStatus) {
		if h == nil || h.Status == HealthMissing {
			return
		}
		if worst == nil || Worse(h.Status, worst.Status) {
			worst = h
		}
	}
	crSynced := crInSync(cr, conds)
	for _, d := range o.Desired {
		gvk := d.GroupVersionKind()
		if IsSecret(gvk) {
			continue
		}
		k := keyOf(d)
		inTree[k] = true
		rs := ResourceStatus{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: d.GetNamespace(), Name: d.GetName(), Status: SyncSynced}
		if l, ok := live[k]; ok {
			rs.Health = ResourceHealth(l)
			consider(rs.Health)
			if !crSynced {
				rs.Status = SyncOutOfSync
			}
		} else {
			missing++
			rs.Status, rs.Health = SyncOutOfSync, &HealthStatus{Status: HealthMissing}
		}
		st.Resources = append(st.Resources, rs)
	}
	for _, c := range o.Children { // controlled, no longer built: the controller prunes them
		if k := keyOf(c); !inTree[k] {
			gvk := c.GroupVersionKind()
			h := ResourceHealth(c)
			consider(h)
			st.Resources = append(st.Resources, ResourceStatus{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
				Namespace: c.GetNamespace(), Name: c.GetName(), Status: SyncOutOfSync, Health: h, RequiresPruning: true})
		}
	}

	// The CR's own conditions (kstatus) count as one more resource.
	crHealth := kstatusHealth(cr)
	switch reason := readyReason(conds); {
	case o.Halted && !isDegradedReason(reason):
		crHealth = &HealthStatus{Status: HealthSuspended, Message: readyMessage(conds)}
	case len(conds) == 0:
		crHealth = &HealthStatus{Status: HealthProgressing, Message: "not reconciled yet"}
	}
	consider(crHealth)
	switch {
	case len(o.Desired) > 0 && len(o.Children) == 0 && missing == len(o.Desired):
		st.Health = AppHealthStatus{Status: HealthMissing, Message: "none of the " + strconv.Itoa(len(o.Desired)) + " objects it builds exists"}
	case worst != nil:
		st.Health = AppHealthStatus{Status: worst.Status, Message: worst.Message}
	default:
		st.Health = AppHealthStatus{Status: HealthUnknown}
	}

	st.Sync = SyncStatus{Status: SyncSynced, ComparedTo: ComparedTo{Source: src, Destination: dest}, Revision: crImage(cr)}
	if !crSynced || missing > 0 || o.BuildErr != "" {
		st.Sync.Status = SyncOutOfSync
	}
	if g := o.Git; g != nil {
		st.Sync.Revision = g.Revision
		if g.Action == "Failed" || g.Action == "Denied" {
			st.Sync.Status = SyncOutOfSync
			st.Conditions = append(st.Conditions, ApplicationCondition{Type: "SyncError", Message: "git sweep: " + g.Message})
		}
	}
	if o.BuildErr != "" {
		st.Conditions = append(st.Conditions, ApplicationCondition{Type: "ComparisonError", Message: o.BuildErr})
	}
	if o.Tenancy != nil {
		st.Conditions = append(st.Conditions, ApplicationCondition{Type: "InvalidSpecError",
			Message: "shown to no org: " + o.Tenancy.Error()})
	}
	switch r := readyReason(conds); r {
	case "ApplyFailed", "Forbidden", "Rejected":
		st.Conditions = append(st.Conditions, ApplicationCondition{Type: "SyncError", Message: readyMessage(conds), LastTransitionTime: readyTime(conds)})
	}
	if t := latestTransition(conds); t != nil {
		st.ReconciledAt, st.ObservedAt = t, t
	}
	st.History = History(cr, o.Git)
	st.OperationState = operationState(cr, conds)
	st.Summary = summary(cr, o.Children)
	return app
}

// condition is the part of a metav1.Condition the plane reads.
type condition struct {
	Type, Status, Reason, Message string
	ObservedGeneration            int64
	LastTransitionTime            metav1.Time
}

func crConditions(cr *unstructured.Unstructured) []condition {
	raw, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	out := make([]condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := condition{}
		c.Type, _ = m["type"].(string)
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		if s, ok := m["lastTransitionTime"].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				c.LastTransitionTime = metav1.NewTime(t)
			}
		}
		switch g := m["observedGeneration"].(type) {
		case int64:
			c.ObservedGeneration = g
		case float64:
			c.ObservedGeneration = int64(g)
		}
		out = append(out, c)
	}
	return out
}

func find(conds []condition, typ string) *condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func readyReason(conds []condition) string {
	if c := find(conds, "Ready"); c != nil {
		return c.Reason
	}
	return ""
}

func readyMessage(conds []condition) string {
	if c := find(conds, "Ready"); c != nil {
		return c.Message
	}
	return ""
}

func readyTime(conds []condition) *metav1.Time {
	if c := find(conds, "Ready"); c != nil && !c.LastTransitionTime.IsZero() {
		t := c.LastTransitionTime
		return &t
	}
	return nil
}

func latestTransition(conds []condition) *metav1.Time {
	var latest *metav1.Time
	for i := range conds {
		t := conds[i].LastTransitionTime
		if !t.IsZero() && (latest == nil || t.After(latest.Time)) {
			latest = &t
		}
	}
	return latest
}

func isDegradedReason(reason string) bool {
	switch reason {
	case "UnknownRole", "InvalidSpec", "SupersededByApp":
		return true
	}
	return false
}

// crInSync reports whether the Kind controller has applied the CR's current generation: it
// observed it and no apply failed.
func crInSync(cr *unstructured.Unstructured, conds []condition) bool {
	observed, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	if observed < cr.GetGeneration() {
		return false
	}
	switch readyReason(conds) {
	case "ApplyFailed", "Forbidden", "Rejected", "BuildFailed":
		return false
	}
	return true
}

// crImage is the repository:tag of a Service-shaped CR, or "".
func crImage(cr *unstructured.Unstructured) string {
	repo, _, _ := unstructured.NestedString(cr.Object, "spec", "image", "repository")
	tag, _, _ := unstructured.NestedString(cr.Object, "spec", "image", "tag")
	switch {
	case repo == "":
		return ""
	case tag == "":
		return repo
	}
	return repo + ":" + tag
}

// History is status.upgradeHistory as Argo history rows, oldest first, ids from 0, then the
// current image (or git revision) as the last row. Rollback takes one of these ids.
func History(cr *unstructured.Unstructured, git *GitRecord) []RevisionHistory {
	raw, _, _ := unstructured.NestedSlice(cr.Object, "status", "upgradeHistory")
	var out []RevisionHistory
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		image, _ := m["image"].(string)
		result, _ := m["result"].(string)
		if image == "" || result != "Succeeded" {
			continue
		}
		h := RevisionHistory{ID: int64(len(out)), Revision: image, Source: ApplicationSource{RepoURL: imageRepo(image), TargetRevision: imageTag(image)},
			InitiatedBy: OperationInitiator{Automated: true}}
		if at, ok := m["at"].(string); ok {
			if t, err := time.Parse(time.RFC3339, at); err == nil {
				h.DeployedAt = metav1.NewTime(t)
			}
		}
		out = append(out, h)
	}
	if img := crImage(cr); img != "" && (len(out) == 0 || out[len(out)-1].Revision != img) {
		h := RevisionHistory{ID: int64(len(out)), Revision: img, Source: ApplicationSource{RepoURL: imageRepo(img), TargetRevision: imageTag(img)},
			DeployedAt: cr.GetCreationTimestamp()}
		if git != nil {
			h.Source = ApplicationSource{RepoURL: git.RepoURL, Path: git.File, TargetRevision: git.Branch}
		}
		if t := latestTransition(crConditions(cr)); t != nil {
			h.DeployedAt = *t
		}
		out = append(out, h)
	}
	return out
}

// imageRepo and imageTag are image's repository and tag as written (kinds.ImageRef): a digest
// belongs to neither and a registry port is never a tag; a reference that does not parse is a
// repository without a tag.
func imageRepo(image string) string {
	r, err := kinds.ParseImageRef(image)
	if err != nil {
		return image
	}
	return r.Name()
}

func imageTag(image string) string {
	r, err := kinds.ParseImageRef(image)
	if err != nil {
		return ""
	}
	return r.Tag
}

// operationState is the last sync the plane requested, judged by the CR's conditions.
func operationState(cr *unstructured.Unstructured, conds []condition) *OperationState {
	at := cr.GetAnnotations()[AnnotationSyncRequestedAt]
	if at == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return nil
	}
	by := cr.GetAnnotations()[AnnotationSyncInitiatedBy]
	os := &OperationState{Operation: Operation{Sync: &SyncOperation{Revision: crImage(cr)}, InitiatedBy: OperationInitiator{Username: by}},
		StartedAt: metav1.NewTime(t)}
	ready, stalled, reconciling := find(conds, "Ready"), find(conds, "Stalled"), find(conds, "Reconciling")
	observed, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration")
	switch {
	case stalled != nil && stalled.Status == "True":
		os.Phase, os.Message = PhaseFailed, stalled.Message
	case observed < cr.GetGeneration() || (reconciling != nil && reconciling.Status == "True"):
		os.Phase, os.Message = PhaseRunning, "waiting for the Kind controller"
	case ready != nil && ready.Status == "True":
		os.Phase, os.Message = PhaseSucceeded, "reconciled by the Kind controller: "+ready.Message
	default:
		os.Phase, os.Message = PhaseRunning, readyMessage(conds)
	}
	if os.Phase != PhaseRunning {
		os.SyncResult = &SyncOperationResult{Revision: crImage(cr)}
	}
	return os
}

func summary(cr *unstructured.Unstructured, children []*unstructured.Unstructured) ApplicationSummary {
	s := ApplicationSummary{}
	s.ExternalURLs, _, _ = unstructured.NestedStringSlice(cr.Object, "status", "endpoints")
	if len(s.ExternalURLs) == 0 && cr.GetKind() == "Static" { // a site: its hosts
		hosts, _, _ := unstructured.NestedStringSlice(cr.Object, "spec", "ingress", "hosts")
		for _, h := range hosts {
			s.ExternalURLs = append(s.ExternalURLs, "https://"+h)
		}
	}
	seen := map[string]bool{}
	for _, c := range children {
		for _, img := range imagesOf(c) {
			if !seen[img] {
				seen[img] = true
				s.Images = append(s.Images, img)
			}
		}
	}
	sort.Strings(s.Images)
	return s
}

// imagesOf lists the container images of a workload or pod.
func imagesOf(u *unstructured.Unstructured) []string {
	var path []string
	switch u.GetKind() {
	case "Pod":
		path = []string{"spec"}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		path = []string{"spec", "template", "spec"}
	default:
		return nil
	}
	var out []string
	for _, f := range []string{"initContainers", "containers"} {
		cs, _, _ := unstructured.NestedSlice(u.Object, append(append([]string{}, path...), f)...)
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if img, ok := m["image"].(string); ok && img != "" {
					out = append(out, img)
				}
			}
		}
	}
	return out
}

// maxResourceVersion is the largest resourceVersion among the CR and its tree, so that an
// application's version moves whenever anything under it does (the stream's
// resourceVersion filter compares them as integers, as Argo CD's does).
func maxResourceVersion(cr *unstructured.Unstructured, sets ...[]*unstructured.Unstructured) string {
	best, bestS := int64(-1), cr.GetResourceVersion()
	consider := func(rv string) {
		if n, err := strconv.ParseInt(rv, 10, 64); err == nil && n > best {
			best, bestS = n, rv
		}
	}
	consider(cr.GetResourceVersion())
	for _, set := range sets {
		for _, u := range set {
			consider(u.GetResourceVersion())
		}
	}
	return bestS
}

// Tree is the application's resource tree: its children, then the ReplicaSets and Pods
// under them with parentRefs. The CR itself is the application, not a node. Secrets never
// appear. It is pure.
func Tree(o Observed) ApplicationTree {
	t := ApplicationTree{Nodes: []ResourceNode{}}
	all := append(append([]*unstructured.Unstructured{}, o.Children...), o.Descendants...)
	byUID := map[string]ResourceRef{}
	for _, u := range all {
		byUID[string(u.GetUID())] = refOf(u)
	}
	for _, u := range all {
		if IsSecret(u.GroupVersionKind()) {
			continue
		}
		n := ResourceNode{ResourceRef: refOf(u), ResourceVersion: u.GetResourceVersion(), Health: ResourceHealth(u), Images: imagesOf(u)}
		ts := u.GetCreationTimestamp()
		if !ts.IsZero() {
			n.CreatedAt = &ts
		}
		for _, or := range u.GetOwnerReferences() {
			if p, ok := byUID[string(or.UID)]; ok {
				n.ParentRefs = append(n.ParentRefs, p)
			}
		}
		n.Info, n.NetworkingInfo = nodeInfo(u)
		t.Nodes = append(t.Nodes, n)
	}
	sort.SliceStable(t.Nodes, func(i, j int) bool {
		a, b := t.Nodes[i].ResourceRef, t.Nodes[j].ResourceRef
		return refKey(a.Group, a.Kind, a.Namespace, a.Name) < refKey(b.Group, b.Kind, b.Namespace, b.Name)
	})
	return t
}

func refOf(u *unstructured.Unstructured) ResourceRef {
	gvk := u.GroupVersionKind()
	return ResourceRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}
}

// nodeInfo is the per-kind detail Argo CD shows on a node.
func nodeInfo(u *unstructured.Unstructured) ([]InfoItem, *NetworkingInfo) {
	switch u.GetKind() {
	case "Pod":
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		statuses, _, _ := unstructured.NestedSlice(u.Object, "status", "containerStatuses")
		ready, restarts := 0, int64(0)
		for _, s := range statuses {
			m, _ := s.(map[string]any)
			if r, _ := m["ready"].(bool); r {
				ready++
			}
			switch n := m["restartCount"].(type) {
			case int64:
				restarts += n
			case float64:
				restarts += int64(n)
			}
		}
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
		return []InfoItem{{Name: "Status Reason", Value: phase}, {Name: "Containers", Value: fmt.Sprintf("%d/%d", ready, len(cs))},
			{Name: "Restart Count", Value: strconv.FormatInt(restarts, 10)}}, &NetworkingInfo{Labels: u.GetLabels()}
	case "Service":
		if u.GroupVersionKind().Group != "" {
			return nil, nil
		}
		sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector")
		return nil, &NetworkingInfo{TargetLabels: sel}
	case "Ingress":
		var urls []string
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		for _, r := range rules {
			if m, ok := r.(map[string]any); ok {
				if h, ok := m["host"].(string); ok && h != "" {
					urls = append(urls, "https://"+h)
				}
			}
		}
		return nil, &NetworkingInfo{ExternalURLs: urls}
	case "Deployment", "StatefulSet":
		want := specReplicas(u)
		return []InfoItem{{Name: "Replicas", Value: fmt.Sprintf("%d/%d", num(u, "status", "readyReplicas"), want)}}, nil
	}
	return nil, nil
}

// stateJSON is a ResourceDiff state: the object as JSON, or "null" when absent.
func stateJSON(u *unstructured.Unstructured) string {
	if u == nil {
		return "null"
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return "null"
	}
	return string(b)
}
