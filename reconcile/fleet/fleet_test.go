package fleet

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/source"
)

func TestTargetOf(t *testing.T) {
	long := strings.Repeat("a", kinds.MaxOrgLength+1)
	for _, c := range []struct {
		file, want, err string
	}{
		{file: "apps/acme/service.yaml", want: "home"},
		{file: "orgs/acme/apps/service.yaml", want: "home"},
		{file: "orgs/acme/clusters/prod/apps/service.yaml", want: "acme/prod"},
		{file: "./orgs/acme/clusters/prod/service.yaml", want: "acme/prod"},
		{file: "orgs/acme/clusters/prod", err: "the directory itself"},
		{file: "orgs/../clusters/prod/x.yaml", want: "home"}, // cleaned to clusters/prod/x.yaml
		{file: "orgs/a..b/clusters/prod/x.yaml", err: "InvalidOrg"},
		{file: "orgs/" + long + "/clusters/prod/x.yaml", err: "longer than 63"},
		{file: "orgs/acme/clusters/Prod_1/x.yaml", err: "cluster name"},
	} {
		got, err := TargetOf(c.file)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.file) {
				t.Errorf("TargetOf(%q) = %v, %v; want an error naming the file and %q", c.file, got, err, c.err)
			}
		case err != nil:
			t.Errorf("TargetOf(%q): %v", c.file, err)
		case got.String() != c.want:
			t.Errorf("TargetOf(%q) = %s, want %s", c.file, got, c.want)
		}
	}
}

func TestRefOf(t *testing.T) {
	for _, c := range []struct {
		org, name, want, err string
	}{
		{org: "acme", name: "prod", want: "orgs/acme/k8s/clusters/prod/kubeconfig"},
		{org: "lux", name: "lux-mainnet.do", want: "orgs/lux/k8s/clusters/lux-mainnet.do/kubeconfig"},
		{org: "acme/../lux", name: "prod", err: "InvalidOrg"},
		{org: "..", name: "prod", err: "InvalidOrg"},
		{org: "", name: "prod", err: "InvalidOrg"},
		{org: strings.Repeat("o", 64), name: "prod", err: "longer than 63"},
		{org: "acme", name: "../lux/k8s/clusters/prod", err: "cluster name"},
	} {
		got, err := RefOf(c.org, c.name)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("RefOf(%q, %q) = %q, %v; want %q", c.org, c.name, got, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("RefOf(%q, %q) = %q, %v; want %q", c.org, c.name, got, err, c.want)
		}
		if org, ok := got.Org(); !ok || org != c.org {
			t.Errorf("%s.Org() = %q, %v", got, org, ok)
		}
	}
}

func TestPathCallerRefusesBadOrgs(t *testing.T) {
	for _, org := range []string{"", "a/b", "..", "a..b", strings.Repeat("x", 64), "-x"} {
		if _, err := PathCaller(org); err == nil {
			t.Errorf("PathCaller(%q) accepted", org)
		}
	}
	if c, err := PathCaller("acme"); err != nil || c.Org() != "acme" {
		t.Errorf("PathCaller(acme) = %v, %v", c, err)
	}
}

func TestSecretName(t *testing.T) {
	a, _ := RefOf("acme", "prod")
	b, _ := RefOf("acme", "prod2")
	c, _ := RefOf("acme.prod", "x") // no dot-joining collision
	d, _ := RefOf("acme", "prod.x")
	names := map[string]bool{}
	for _, r := range []CredentialRef{a, b, c, d} {
		n := SecretName(r)
		if names[n] {
			t.Errorf("SecretName(%s) = %s collides", r, n)
		}
		names[n] = true
		if len(n) != len("fleet-")+40 || SecretName(r) != n {
			t.Errorf("SecretName(%s) = %s: want fleet- and 40 hex digits, stable", r, n)
		}
	}
	// Pinned: the README's shell line prints the same name.
	if got := SecretName("orgs/acme/k8s/clusters/prod/kubeconfig"); got != "fleet-f8a369e7cba628e16fc4a9d7510a42a589d5cbb2" {
		t.Errorf("SecretName(orgs/acme/k8s/clusters/prod/kubeconfig) = %s, not what the README's shell line prints", got)
	}
}

func kubeconfig(t *testing.T, mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cl := &clientcmdapi.Cluster{Server: "https://203.0.113.7:6443", CertificateAuthorityData: []byte("ca")}
	ai := &clientcmdapi.AuthInfo{Token: "t"}
	if mutate != nil {
		mutate(cl, ai)
	}
	cfg.Clusters["c"], cfg.AuthInfos["u"] = cl, ai
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSafeConfig(t *testing.T) {
	const endpoint = "https://203.0.113.7:6443"
	for name, c := range map[string]struct {
		mutate   func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		endpoint string
		err      string
	}{
		"self-contained": {},
		"trailing slash": {endpoint: endpoint + "/"},
		"token file": {mutate: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, err: "tokenFile"},
		"client cert file": {mutate: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) { a.ClientCertificate, a.ClientKey = "/c", "/k" }, err: "client-certificate (a file path), client-key"},
		"ca file":          {mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.CertificateAuthority = "/etc/ca" }, err: "certificate-authority"},
		"exec plugin": {mutate: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.Exec = &clientcmdapi.ExecConfig{Command: "sh"}
		}, err: "exec (a program)"},
		"auth provider": {mutate: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
		}, err: "auth-provider"},
		"insecure": {mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
		}, err: "insecure-skip-tls-verify"},
		"proxy":               {mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.ProxyURL = "http://10.0.0.1:3128" }, err: "proxy-url"},
		"another server":      {mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "https://198.51.100.1:6443" }, err: "is not the registration's endpoint"},
		"plain http":          {mutate: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "http://203.0.113.7:6443" }, err: "not https"},
		"endpoint other port": {endpoint: "https://203.0.113.7:443", err: "is not the registration's endpoint"},
		"endpoint other path": {endpoint: endpoint + "/k8s/other", err: "is not the registration's endpoint"},
	} {
		t.Run(name, func(t *testing.T) {
			ep := endpoint
			if c.endpoint != "" {
				ep = c.endpoint
			}
			cfg, err := SafeConfig(kubeconfig(t, c.mutate), ep, false)
			if c.err == "" {
				if err != nil {
					t.Fatalf("SafeConfig: %v", err)
				}
				if cfg.Dial == nil || cfg.Host != endpoint {
					t.Errorf("config: host %q, dial gate %v", cfg.Host, cfg.Dial != nil)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("SafeConfig = %v, want an error with %q", err, c.err)
			}
		})
	}
}

func TestCheckDial(t *testing.T) {
	for addr, routableWant := range map[string]bool{
		"203.0.113.7:6443":   true,
		"8.8.8.8:443":        true,
		"[2001:db8::1]:443":  true,
		"127.0.0.1:6443":     false,
		"[::1]:6443":         false,
		"10.0.0.1:6443":      false,
		"172.16.3.4:6443":    false,
		"192.168.1.1:6443":   false,
		"169.254.169.254:80": false, // the cloud metadata endpoint
		"[fe80::1]:6443":     false,
		"[fd00::1]:6443":     false,
		"100.64.0.1:6443":    false,
		"0.0.0.0:6443":       false,
		"224.0.0.1:6443":     false,
	} {
		err := checkDial(addr, false)
		if routableWant != (err == nil) {
			t.Errorf("checkDial(%s) = %v, want routable=%v", addr, err, routableWant)
		}
		if err != nil && !errors.Is(err, ErrNonRoutable) {
			t.Errorf("checkDial(%s) = %v, want ErrNonRoutable", addr, err)
		}
		if err := checkDial(addr, true); err != nil {
			t.Errorf("checkDial(%s, allow) = %v", addr, err)
		}
	}
}

func TestBoundGate(t *testing.T) {
	bounded := &Bound{cluster: Cluster{Name: "shared", Org: "acme", Namespaces: []string{"acme-apps", "acme-data"}}}
	whole := &Bound{cluster: Cluster{Name: "own", Org: "acme"}}
	for _, c := range []struct {
		b    *Bound
		nss  []string
		want string // "" admitted
	}{
		{b: bounded, nss: []string{"acme-apps"}},
		{b: bounded, nss: []string{"acme-apps", "acme-data"}},
		{b: bounded, nss: []string{"acme-apps", "lux"}, want: `cluster shared: namespace "lux" is outside the registration's namespaces bound [acme-apps acme-data]: refused, not narrowed`},
		{b: bounded, nss: []string{"kube-system"}, want: `namespace "kube-system" is outside`},
		{b: bounded, nss: []string{""}, want: "every namespace is outside"},
		{b: whole, nss: []string{"anything"}},
	} {
		_, err := c.b.Scope(c.nss...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s.Scope(%v): %v", c.b.cluster.Name, c.nss, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s.Scope(%v) = %v, want %q", c.b.cluster.Name, c.nss, err, c.want)
		}
		var oob *OutOfBoundError
		if c.want != "" && !errors.As(err, &oob) {
			t.Errorf("%s.Scope(%v): %T is not an OutOfBoundError", c.b.cluster.Name, c.nss, err)
		}
	}
	if _, err := bounded.WholeCluster(); err == nil || !strings.Contains(err.Error(), "[acme-apps acme-data]") {
		t.Errorf("bounded WholeCluster() = %v, want refused naming the bound", err)
	}
	if _, err := whole.WholeCluster(); err != nil {
		t.Errorf("whole-cluster WholeCluster(): %v", err)
	}
}

func TestAdmitPath(t *testing.T) {
	bound := []string{"acme-apps"}
	for _, c := range []struct {
		method, path string
		ok           bool
	}{
		{"GET", "/version", true},
		{"GET", "/api", true},
		{"GET", "/apis", true},
		{"GET", "/api/v1", true},
		{"GET", "/apis/apps", true},
		{"GET", "/apis/apps/v1", true},
		{"GET", "/openapi/v3", true},
		{"POST", "/api/v1", false},
		{"GET", "/api/v1/namespaces/acme-apps/configmaps", true},
		{"PATCH", "/apis/apps/v1/namespaces/acme-apps/deployments/web", true},
		{"PATCH", "/apis/hanzo.ai/v1/namespaces/acme-apps/services/web/status", true},
		{"GET", "/api/v1/namespaces/acme-apps", true},
		{"DELETE", "/api/v1/namespaces/acme-apps", false}, // a bounded registration never deletes its namespace
		{"PATCH", "/api/v1/namespaces/acme-apps", false},
		{"GET", "/api/v1/namespaces/lux-chain/configmaps", false},
		{"GET", "/api/v1/namespaces/lux-chain", false},
		{"GET", "/api/v1/namespaces", false},
		{"GET", "/api/v1/configmaps", false}, // every namespace
		{"GET", "/api/v1/nodes", false},
		{"PATCH", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/x", false},
		{"GET", "/api/v1/watch/namespaces/acme-apps/configmaps", false},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", false},
		{"GET", "/healthz", false},
		{"GET", "/", false},
	} {
		if _, ok := admitPath(c.method, c.path, bound); ok != c.ok {
			t.Errorf("admitPath(%s %s) = %v, want %v", c.method, c.path, ok, c.ok)
		}
	}
}

func TestView(t *testing.T) {
	snap := &source.Snapshot{Revision: "r1", Files: []source.File{
		{Path: "apps/web.yaml", Data: []byte("a")},
		{Path: "orgs/acme/clusters/prod/web.yaml", Data: []byte("b")},
		{Path: "orgs/acme/clusters/prod/db/sql.yaml", Data: []byte("c")},
		{Path: "orgs/lux/clusters/prod/node.yaml", Data: []byte("d")},
		{Path: "orgs/a..b/clusters/prod/x.yaml", Data: []byte("e")},
		{Path: "orgs/acme/apps.yaml", Data: []byte("f")},
	}}
	acmeCaller, _ := PathCaller("acme")
	luxCaller, _ := PathCaller("lux")
	paths := func(s *source.Snapshot) (out []string) {
		for _, f := range s.Files {
			p := f.Path
			if f.Refused != nil {
				p += " (refused: " + f.Refused.Error() + ")"
			}
			out = append(out, p)
		}
		return out
	}
	for name, c := range map[string]struct {
		target Target
		want   []string
	}{
		"home":      {Target{}, []string{"apps/web.yaml", "orgs/a..b/clusters/prod/x.yaml (refused: orgs/a..b/clusters/prod/x.yaml: InvalidOrg: org \"a..b\" holds '/' or '..')", "orgs/acme/apps.yaml"}},
		"acme/prod": {Target{acmeCaller, "prod"}, []string{"orgs/acme/clusters/prod/web.yaml", "orgs/acme/clusters/prod/db/sql.yaml"}},
		"lux/prod":  {Target{luxCaller, "prod"}, []string{"orgs/lux/clusters/prod/node.yaml"}},
		"acme/none": {Target{acmeCaller, "none"}, nil},
	} {
		got := paths(View{Target: c.target}.filter(snap))
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s view = %q, want %q", name, got, c.want)
		}
	}
	var got []string
	for _, tg := range Targets(snap) {
		got = append(got, tg.String())
	}
	if strings.Join(got, " ") != "acme/prod lux/prod" {
		t.Errorf("Targets = %v", got)
	}
}
