package drive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
)

// TenantOptions names what tenant onboarding creates; the defaults are the reference's
// names, and each universe may set its own.
type TenantOptions struct {
	// LabelKey=LabelValue selects the tenant Namespaces and labels the objects created.
	LabelKey, LabelValue string
	// RoleBinding names the namespaced RoleBinding granting ClusterRole to Subject.
	RoleBinding, ClusterRole string
	// SubjectNamespace/SubjectName is the platform's ServiceAccount.
	SubjectNamespace, SubjectName string
	// PullSecret names the image-pull Secret created in each tenant Namespace, projected
	// from SourceSecret (namespace/name, type kubernetes.io/dockerconfigjson). An empty
	// SourceSecret creates no pull Secret.
	PullSecret   string
	SourceSecret types.NamespacedName
	// Resync re-checks every tenant Namespace this often (the source Secret is not watched).
	Resync time.Duration
	// LabelManagers are the field managers whose write of LabelKey makes a Namespace a
	// tenant (read from managedFields): the platform's by default (also when empty), never
	// the git sweep's, so a universe-repo writer cannot declare a Namespace that receives the
	// pull Secret.
	LabelManagers []string
	// OperatorNamespace is never onboarded (nor is any kube-* Namespace).
	OperatorNamespace string
}

// DefaultTenantLabelManagers: only the platform's cloud API, which creates tenant Namespaces,
// makes one a tenant.
var DefaultTenantLabelManagers = []string{"cloud-api"}

// DefaultTenantOptions returns the reference's names.
func DefaultTenantOptions() TenantOptions {
	return TenantOptions{
		LabelKey: "hanzo.ai/managed-by", LabelValue: "platform",
		RoleBinding: "cloud-api-platform", ClusterRole: "hanzo-cloud-platform-tenant",
		SubjectNamespace: "hanzo", SubjectName: "cloud-api",
		PullSecret: "ghcr-pull", Resync: 10 * time.Minute,
		LabelManagers: DefaultTenantLabelManagers,
	}
}

var metricTenants = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "universe_tenant_onboardings_total",
	Help: "Tenant namespace reconciles, by result (ok, secret-missing, secret-foreign, failed, untrusted, reserved).",
}, []string{"result"})

// Tenants onboards tenant Namespaces: a RoleBinding to the platform's tenant ClusterRole
// (never a ClusterRoleBinding) and an image-pull Secret, both owned by the Namespace.
type Tenants struct {
	Client client.Client
	// Reader reads Secrets uncached (the operator does not cache every Secret).
	Reader client.Reader
	Opts   TenantOptions
	Log    logr.Logger
}

// SetupWithManager watches labelled Namespaces and the RoleBindings they own.
func (t *Tenants) SetupWithManager(mgr ctrl.Manager) error {
	if t.Opts.LabelKey == "" || t.Opts.RoleBinding == "" || t.Opts.ClusterRole == "" || t.Opts.SubjectName == "" || t.Opts.SubjectNamespace == "" {
		return errors.New("tenant onboarding needs a label key, RoleBinding, ClusterRole and subject ServiceAccount")
	}
	labelled := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[t.Opts.LabelKey] == t.Opts.LabelValue })
	return ctrl.NewControllerManagedBy(mgr).Named("tenants").
		For(&corev1.Namespace{}, builder.WithPredicates(labelled)).
		Owns(&rbacv1.RoleBinding{}).
		Complete(t)
}

// Reconcile onboards one Namespace.
func (t *Tenants) Reconcile(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
	var ns corev1.Namespace
	if err := t.Client.Get(ctx, req.NamespacedName, &ns); err != nil {
		return crreconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ns.Labels[t.Opts.LabelKey] != t.Opts.LabelValue || ns.DeletionTimestamp != nil {
		return crreconcile.Result{}, nil
	}
	log := t.Log.WithValues("namespace", ns.Name)
	why := t.refuse(&ns)
	if why == "" {
		// the trust check reads managedFields: read the Namespace from the apiserver,
		// whatever the cache keeps
		if err := t.Reader.Get(ctx, req.NamespacedName, &ns); err != nil {
			return crreconcile.Result{}, client.IgnoreNotFound(err)
		}
		if ns.Labels[t.Opts.LabelKey] != t.Opts.LabelValue || ns.DeletionTimestamp != nil {
			return crreconcile.Result{}, nil
		}
		if !kinds.LabelSetBy(&ns, t.Opts.LabelKey, t.labelManagers()) {
			why = "untrusted"
		}
	}
	if why != "" {
		metricTenants.WithLabelValues(why).Inc()
		log.Info("namespace not onboarded: "+refusals[why], "label", t.Opts.LabelKey, "trustedManagers", t.labelManagers())
		return crreconcile.Result{}, nil
	}
	res, err := t.onboard(ctx, &ns)
	if err != nil {
		metricTenants.WithLabelValues("failed").Inc()
		class, reason := condition.ClassOf(err)
		log.Info("tenant namespace not onboarded", "class", class, "reason", reason, "error", err.Error())
		return tenantRequeue(err, t.Opts.Resync)
	}
	metricTenants.WithLabelValues(res).Inc()
	switch res {
	case "secret-missing":
		log.Info("tenant pull secret source missing; RoleBinding applied, pull Secret skipped", "source", t.Opts.SourceSecret.String())
	case "secret-foreign":
		log.Info("tenant namespace holds a Secret of the pull Secret's name that this operator did not create; leaving it alone", "secret", t.Opts.PullSecret)
	default:
		log.V(1).Info("tenant namespace onboarded")
	}
	return crreconcile.Result{RequeueAfter: t.Opts.Resync}, nil
}

// tenantRequeue is the answer to an onboarding that failed with err (Requeue): a transient
// failure backs off, a missing RBAC grant (Blocked) waits for the resync rather than
// retrying hot, an object the apiserver refuses (Terminal) waits for the Namespace to change.
func tenantRequeue(err error, resync time.Duration) (crreconcile.Result, error) {
	return Requeue(err, condition.Intervals{Resync: resync})
}

// onboard applies the RoleBinding and the pull Secret of ns; it returns the metric's result.
func (t *Tenants) onboard(ctx context.Context, ns *corev1.Namespace) (string, error) {
	if err := t.Client.Apply(ctx, t.roleBinding(ns), client.FieldOwner(kinds.ManagerTenants), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("apply RoleBinding %s/%s: %w", ns.Name, t.Opts.RoleBinding, err)
	}
	return t.pullSecret(ctx, ns)
}

var refusals = map[string]string{
	"reserved":  "the operator's own and kube-* namespaces are never tenants",
	"untrusted": "its tenant label was not set by a trusted field manager",
}

func (t *Tenants) labelManagers() []string {
	if len(t.Opts.LabelManagers) == 0 {
		return DefaultTenantLabelManagers
	}
	return t.Opts.LabelManagers
}

// refuse names why ns is never a tenant whatever its labels ("reserved"), or "".
func (t *Tenants) refuse(ns *corev1.Namespace) string {
	if ns.Name == t.Opts.OperatorNamespace || strings.HasPrefix(ns.Name, "kube-") {
		return "reserved"
	}
	return ""
}

func (t *Tenants) labels() map[string]string {
	return map[string]string{t.Opts.LabelKey: t.Opts.LabelValue, "app.kubernetes.io/managed-by": "universe-operator"}
}

func (t *Tenants) owner(ns *corev1.Namespace) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("Namespace").WithName(ns.Name).WithUID(ns.UID).
		WithController(true).WithBlockOwnerDeletion(true)
}

func (t *Tenants) roleBinding(ns *corev1.Namespace) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(t.Opts.RoleBinding, ns.Name).
		WithLabels(t.labels()).WithOwnerReferences(t.owner(ns)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(t.Opts.ClusterRole)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(t.Opts.SubjectNamespace).WithName(t.Opts.SubjectName))
}

// pullSecret projects the source Secret into ns. It fails open: a missing or unusable
// source is reported ("secret-missing") and costs only the Secret. It never overwrites a
// Secret it did not create ("secret-foreign").
func (t *Tenants) pullSecret(ctx context.Context, ns *corev1.Namespace) (string, error) {
	if t.Opts.PullSecret == "" || t.Opts.SourceSecret.Name == "" {
		return "ok", nil
	}
	var src corev1.Secret
	err := t.Reader.Get(ctx, t.Opts.SourceSecret, &src)
	if apierrors.IsNotFound(err) || (err == nil && len(src.Data[corev1.DockerConfigJsonKey]) == 0) {
		return "secret-missing", nil
	}
	if err != nil {
		return "", fmt.Errorf("read pull secret source %s: %w", t.Opts.SourceSecret, err)
	}
	var live corev1.Secret
	err = t.Reader.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: t.Opts.PullSecret}, &live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("read Secret %s/%s: %w", ns.Name, t.Opts.PullSecret, err)
	case !ownedBy(&live, ns.UID):
		return "secret-foreign", nil
	}
	sec := corev1ac.Secret(t.Opts.PullSecret, ns.Name).
		WithLabels(t.labels()).WithOwnerReferences(t.owner(ns)).
		WithType(corev1.SecretTypeDockerConfigJson).
		WithData(map[string][]byte{corev1.DockerConfigJsonKey: src.Data[corev1.DockerConfigJsonKey]})
	if err := t.Client.Apply(ctx, sec, client.FieldOwner(kinds.ManagerTenants), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("apply Secret %s/%s: %w", ns.Name, t.Opts.PullSecret, err)
	}
	return "ok", nil
}

// ownedBy: the Secret is this loop's, owned by the Namespace and applied by kinds.ManagerTenants.
func ownedBy(s *corev1.Secret, nsUID types.UID) bool {
	owned := false
	for _, r := range s.OwnerReferences {
		if r.Kind == "Namespace" && r.UID == nsUID {
			owned = true
		}
	}
	if !owned {
		return false
	}
	for _, mf := range s.ManagedFields {
		if mf.Manager == kinds.ManagerTenants {
			return true
		}
	}
	return false
}
