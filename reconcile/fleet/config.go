package fleet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openuniverse/operator/source/transport"
)

// SafeConfig turns a stored kubeconfig into the REST config of endpoint. The kubeconfig
// must be self-contained and inert: no file paths (a path would read the operator's own
// files, its ServiceAccount token among them), no exec or auth-provider plugin (a plugin
// runs a program), no proxy, TLS verified, and its server must be endpoint (so a rotated
// credential cannot move a registration to another apiserver). The config dials only
// routable addresses unless allowNonRoutable (tests: the testbed's apiservers are on
// loopback); the check runs on the resolved address at dial time, so DNS cannot evade it.
func SafeConfig(kubeconfig []byte, endpoint string, allowNonRoutable bool) (*rest.Config, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	kctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("kubeconfig: current context %q is not defined", raw.CurrentContext)
	}
	cl, ok := raw.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("kubeconfig: cluster %q of context %q is not defined", kctx.Cluster, raw.CurrentContext)
	}
	ai, ok := raw.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("kubeconfig: user %q of context %q is not defined", kctx.AuthInfo, raw.CurrentContext)
	}
	var refused []string
	for what, set := range map[string]bool{
		"certificate-authority (a file path)": cl.CertificateAuthority != "",
		"insecure-skip-tls-verify":            cl.InsecureSkipTLSVerify,
		"proxy-url":                           cl.ProxyURL != "",
		"client-certificate (a file path)":    ai.ClientCertificate != "",
		"client-key (a file path)":            ai.ClientKey != "",
		"tokenFile (a file path)":             ai.TokenFile != "",
		"exec (a program)":                    ai.Exec != nil,
		"auth-provider (a plugin)":            ai.AuthProvider != nil,
	} {
		if set {
			refused = append(refused, what)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, fmt.Errorf("kubeconfig: refused: %s (a stored credential must be self-contained data)", strings.Join(refused, ", "))
	}
	if err := sameServer(cl.Server, endpoint); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error { return checkDial(address, allowNonRoutable) }}
	cfg.Dial = d.DialContext
	cfg.Proxy = nil
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

func sameServer(server, endpoint string) error {
	s, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("kubeconfig: server %q: %w", server, err)
	}
	e, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("registration endpoint %q: %w", endpoint, err)
	}
	if s.Scheme != "https" {
		return fmt.Errorf("kubeconfig: server %q is not https", server)
	}
	if !strings.EqualFold(s.Host, e.Host) || e.Scheme != "https" || strings.TrimSuffix(s.Path, "/") != strings.TrimSuffix(e.Path, "/") {
		return fmt.Errorf("kubeconfig: server %q is not the registration's endpoint %q", server, endpoint)
	}
	return nil
}

// ErrNonRoutable: the apiserver resolved to an address the fleet never dials.
var ErrNonRoutable = errors.New("non-routable apiserver address refused")

// checkDial refuses loopback, private, link-local (the cloud metadata endpoint among them),
// unique-local, CGNAT, unspecified and multicast addresses unless allowNonRoutable
// (transport.PublicAddr, the registry client's check too).
func checkDial(address string, allowNonRoutable bool) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("dial %s: not an IP address", address)
	}
	if allowNonRoutable || transport.PublicAddr(ip) {
		return nil
	}
	return fmt.Errorf("dial %s: %w", address, ErrNonRoutable)
}
