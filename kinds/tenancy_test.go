package kinds_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/kinds"
)

// orgFields is managedFields JSON owning the org label (and, with extra, another label).
const orgFields = `{"f:metadata":{"f:labels":{"f:hanzo.ai/org":{}}}}`

func namespace(name, org string, managers map[string]string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if org != "" {
		ns.Labels = map[string]string{kinds.OrgLabel: org}
	}
	for m, fields := range managers {
		ns.ManagedFields = append(ns.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)})
	}
	return ns
}

func cr(ns, org string) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}}
	if org != "" {
		c.Labels = map[string]string{kinds.OrgLabel: org}
	}
	return c
}

func reason(err error) string {
	var te *kinds.TenancyError
	if errors.As(err, &te) {
		return te.Reason
	}
	if err != nil {
		return "untyped: " + err.Error()
	}
	return ""
}

func TestTenancyAdmit(t *testing.T) {
	trusted := map[string]string{"universe-operator-gitops": orgFields}
	for _, tc := range []struct {
		name       string
		ns         *corev1.Namespace
		cr         *corev1.ConfigMap
		named      string
		wantOrg    string
		wantReason string
		// wantOrgOnly: AdmitOrg's answer (the loops that act for an org)
		wantOrgReason string
	}{
		{name: "trusted org, CR unlabelled", ns: namespace("a", "orga", trusted), cr: cr("a", ""), wantOrg: "orga"},
		{name: "trusted org, CR agrees", ns: namespace("a", "orga", trusted), cr: cr("a", "orga"), wantOrg: "orga"},
		{name: "trusted org, CR claims another", ns: namespace("a", "orga", trusted), cr: cr("a", "orgb"), wantReason: kinds.ReasonOrgMismatch, wantOrgReason: kinds.ReasonOrgMismatch},
		{name: "label written by the tenant itself", ns: namespace("a", "orgb", map[string]string{"kubectl-edit": orgFields}), cr: cr("a", "orgb"),
			wantReason: kinds.ReasonNamespaceHasNoOrg, wantOrgReason: kinds.ReasonNamespaceHasNoOrg},
		{name: "trusted manager owns another field only", ns: namespace("a", "orgb", map[string]string{"universe-operator-gitops": `{"f:metadata":{"f:labels":{"f:team":{}}}}`}),
			cr: cr("a", ""), wantOrgReason: kinds.ReasonNamespaceHasNoOrg},
		{name: "no managedFields at all", ns: namespace("a", "orga", nil), cr: cr("a", "orga"), wantReason: kinds.ReasonNamespaceHasNoOrg, wantOrgReason: kinds.ReasonNamespaceHasNoOrg},
		{name: "namespace without org, CR claims one", ns: namespace("a", "", nil), cr: cr("a", "orga"), wantReason: kinds.ReasonNamespaceHasNoOrg, wantOrgReason: kinds.ReasonNamespaceHasNoOrg},
		{name: "namespace without org, CR claims none", ns: namespace("a", "", nil), cr: cr("a", ""), wantOrgReason: kinds.ReasonNamespaceHasNoOrg},
		{name: "other namespace", ns: namespace("b", "orga", trusted), cr: cr("a", ""), wantReason: kinds.ReasonNamespaceMismatch, wantOrgReason: kinds.ReasonNamespaceMismatch},
		{name: "named org differs", ns: namespace("a", "orga", trusted), cr: cr("a", ""), named: "orgb", wantOrg: "orga", wantOrgReason: kinds.ReasonOrgMismatch},
		{name: "named org agrees", ns: namespace("a", "orga", trusted), cr: cr("a", ""), named: "orga", wantOrg: "orga"},
		{name: "trusted but invalid org", ns: namespace("a", "a..b", trusted), cr: cr("a", ""), wantOrgReason: kinds.ReasonNamespaceHasNoOrg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ten := kinds.Tenancy{}
			org, err := ten.Admit(tc.cr, tc.ns)
			if reason(err) != tc.wantReason || (err == nil && org != tc.wantOrg && tc.wantOrgReason == "") {
				t.Errorf("Admit = %q, %v; want %q, reason %q", org, err, tc.wantOrg, tc.wantReason)
			}
			org, err = ten.AdmitOrg(tc.cr, tc.ns, tc.named)
			if reason(err) != tc.wantOrgReason || (err == nil && org != tc.wantOrg) {
				t.Errorf("AdmitOrg = %q, %v; want %q, reason %q", org, err, tc.wantOrg, tc.wantOrgReason)
			}
		})
	}
}

func TestTenancyManagersFlag(t *testing.T) {
	ns := namespace("a", "orga", map[string]string{"platform": orgFields})
	if org, err := (kinds.Tenancy{}).NamespaceOrg(ns); err == nil || org != "" {
		t.Errorf("default managers trusted %q: %v", org, err)
	}
	if org, err := (kinds.Tenancy{Managers: []string{"platform"}}).NamespaceOrg(ns); err != nil || org != "orga" {
		t.Errorf("Managers=platform: %q, %v", org, err)
	}
}

func TestValidOrg(t *testing.T) {
	for org, ok := range map[string]bool{
		"hanzo": true, "lux-1": true, "": false, "a/b": false, "..": false, "a..b": false,
		strings.Repeat("a", kinds.MaxOrgLength): true, strings.Repeat("a", kinds.MaxOrgLength+1): false, "-a": false, "a b": false,
	} {
		if err := kinds.ValidOrg(org); (err == nil) != ok {
			t.Errorf("ValidOrg(%q) = %v, want ok=%v", org, err, ok)
		}
	}
}

// TestLabelSetBy: a label is trusted by who owns it in managedFields, per key; another
// manager owning the key, the same manager owning another key, or no managedFields at all
// trust nothing.
func TestLabelSetBy(t *testing.T) {
	const key = "hanzo.ai/managed-by"
	tenantFields := `{"f:metadata":{"f:labels":{"f:hanzo.ai/managed-by":{}}}}`
	cases := []struct {
		name     string
		managers map[string]string
		want     bool
	}{
		{"the platform wrote it", map[string]string{"cloud-api": tenantFields}, true},
		{"the git sweep wrote it", map[string]string{"universe-operator-gitops": tenantFields}, false},
		{"the platform wrote another label", map[string]string{"cloud-api": orgFields, "kubectl": tenantFields}, false},
		{"no managedFields", nil, false},
		{"unparseable fields", map[string]string{"cloud-api": `{"f:metadata":`}, false},
	}
	for _, c := range cases {
		ns := namespace("n", "", c.managers)
		ns.Labels = map[string]string{key: "platform"}
		if got := kinds.LabelSetBy(ns, key, []string{"cloud-api"}); got != c.want {
			t.Errorf("%s: LabelSetBy = %v, want %v", c.name, got, c.want)
		}
	}
}
