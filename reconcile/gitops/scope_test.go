package gitops

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOptionsScope(t *testing.T) {
	type want struct {
		All        bool
		Namespaces []string
		Subset     []Ref
		Err        bool
	}
	cases := map[string]struct {
		reason   string
		args     []string
		operator string
		want     want
	}{
		"nothing named owns nothing": {
			reason:   "the operator's namespace is not owned unless named: an empty flag is an error",
			operator: "hanzo",
			want:     want{Err: true},
		},
		"explicit set": {
			args: []string{"--gitops-namespaces=b,a"}, operator: "hanzo",
			want: want{Namespaces: []string{"a", "b"}},
		},
		"star means all": {
			args: []string{"--gitops-namespaces=a,*"}, operator: "hanzo",
			want: want{All: true, Namespaces: []string{"a"}},
		},
		"blank is an error, never means all": {
			reason: "an empty value is unset, not a fail-open scope",
			args:   []string{"--gitops-namespaces= , "}, operator: "hanzo",
			want: want{Err: true},
		},
		"nothing owned is an error": {
			reason: "no flag and no operator namespace must not become every namespace",
			want:   want{Err: true},
		},
		"subset": {
			args: []string{"--gitops-namespaces=hanzo", "--gitops-apply-scope=web,zen/zen"}, operator: "hanzo",
			want: want{Namespaces: []string{"hanzo"}, Subset: []Ref{{Name: "web"}, {Namespace: "zen", Name: "zen"}}},
		},
		"malformed subset is an error": {
			reason: "a typo must not silently widen or narrow what is applied",
			args:   []string{"--gitops-namespaces=hanzo", "--gitops-apply-scope=web,/x,a/b/c"}, operator: "hanzo",
			want: want{Err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			s, err := o.Scope(Self{Namespace: tc.operator})
			got := want{All: s.OwnsAll(), Namespaces: s.Namespaces(), Subset: s.Subset(), Err: err != nil}
			if err != nil {
				got = want{Err: true}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nScope (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestZeroScopeOwnsNothing(t *testing.T) {
	var s Scope
	if s.Owns("default") || s.OwnsAll() {
		t.Error("the zero Scope owns something")
	}
	p := s.Plan(nil, nil)
	if len(p.Applies) != 0 {
		t.Error("the zero Scope plans applies")
	}
}

func TestParseRef(t *testing.T) {
	cases := map[string]struct {
		in   string
		want Ref
		err  bool
	}{
		"name":         {in: "web", want: Ref{Name: "web"}},
		"pair":         {in: "ns/web", want: Ref{Namespace: "ns", Name: "web"}},
		"empty ns":     {in: "/web", err: true},
		"empty name":   {in: "ns/", err: true},
		"slash":        {in: "/", err: true},
		"three":        {in: "a/b/c", err: true},
		"empty string": {in: "", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseRef(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("ParseRef(%q) error = %v, want error %v", tc.in, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseRef(%q) (-want +got):\n%s", tc.in, diff)
			}
			if !tc.err && got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

func TestScopeString(t *testing.T) {
	cases := map[string]struct {
		ns   []string
		want string
	}{
		"all":    {[]string{"*"}, "(every namespace but kube-system,kube-public,kube-node-lease)"},
		"sorted": {[]string{"b", "a"}, "a,b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := mustScope(t, tc.ns, nil).String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestInterval(t *testing.T) {
	cases := map[string]struct {
		in, want time.Duration
	}{
		"default": {0, 45 * time.Second},
		"floor":   {time.Second, 10 * time.Second},
		"kept":    {time.Minute, time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := (Options{Resync: tc.in}).Interval(); got != tc.want {
				t.Errorf("Interval() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSplitList(t *testing.T) {
	if diff := cmp.Diff([]string{"a", "b", "c", "*"}, SplitList(" a, b\tc\n,,*")); diff != "" {
		t.Errorf("SplitList (-want +got):\n%s", diff)
	}
	if got := SplitList(" , \n"); len(got) != 0 {
		t.Errorf("SplitList of separators = %v, want none", got)
	}
}

func TestScopeCovers(t *testing.T) {
	named, _ := NewScope([]string{"team-a"}, nil)
	all, _ := NewScope([]string{All}, nil)
	all = all.WithSelf(Self{Namespace: "universe-system"})
	cm := schema.GroupKind{Kind: "ConfigMap"}
	crd := schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	cases := []struct {
		name       string
		scope      Scope
		gk         schema.GroupKind
		namespaced bool
		ns, obj    string
		want       bool
	}{
		{"an object of a named namespace", named, cm, true, "team-a", "x", true},
		{"an object of another namespace", named, cm, true, "team-b", "x", false},
		{"a Namespace by its name", named, namespaceKind, false, "", "team-a", true},
		{"another Namespace", named, namespaceKind, false, "", "team-b", false},
		{"a cluster-scoped kind: the sweep's to judge", named, crd, false, "", "things.example.com", true},
		{"* covers any namespace", all, cm, true, "team-z", "x", true},
		{"* does not cover the operator's own", all, cm, true, "universe-system", "x", false},
		{"* does not cover kube-system", all, namespaceKind, false, "", "kube-system", false},
	}
	for _, c := range cases {
		if got := c.scope.Covers(c.gk, c.namespaced, c.ns, c.obj); got != c.want {
			t.Errorf("%s: Covers = %t, want %t", c.name, got, c.want)
		}
	}
}
