package k8s_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/drive/plane/k8s"
	"github.com/openuniverse/operator/drive/plane/k8s/ops"
	"github.com/openuniverse/operator/e2e/testbed"
)

const audience = "k8s-plane"

// served is the plane's HTTP handler behind the deploy plane's OIDC authenticator, with a
// testbed issuer.
func served(t *testing.T) (*testbed.OIDCIssuer, http.Handler) {
	t.Helper()
	iss, err := testbed.NewOIDCIssuer(audience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	o := deploy.DefaultAuthOptions()
	o.Issuer, o.Audience = iss.URL, audience
	a, err := deploy.NewAuthenticator(t.Context(), o, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return iss, env.plane.Handler(k8s.OIDC{A: a}, logr.Discard())
}

func token(iss *testbed.OIDCIssuer, org string) string {
	return iss.Token(map[string]any{"sub": "alice-sub", "aud": audience, "org": org, "email": "alice@acme"})
}

func post(t *testing.T, hc *http.Client, base, path, tok, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestHTTPAndSocket: /v1/k8s answers 401 without a token, with an unsigned one and with one
// for another audience; a valid token's org is the caller's (clusters.list lists acme's
// two); the same handler on the unix socket is mode 0600 and needs the token too.
func TestHTTPAndSocket(t *testing.T) {
	setup(t)
	iss, h := served(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	path := k8s.Prefix + "/clusters/list"
	for what, tok := range map[string]string{
		"no token":       "",
		"unsigned":       iss.UnsignedToken(map[string]any{"sub": "x", "aud": audience, "org": acme}),
		"other audience": iss.Token(map[string]any{"sub": "x", "aud": "else", "org": acme}),
	} {
		if code, body := post(t, srv.Client(), srv.URL, path, tok, "{}"); code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", what, code, body)
		}
	}
	code, body := post(t, srv.Client(), srv.URL, path, token(iss, acme), "{}")
	var list ops.ClustersListReply
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Clusters) != 2 {
		t.Fatalf("clusters.list: %d %s", code, body)
	}
	if code, body := post(t, srv.Client(), srv.URL, k8s.Prefix+"/pods/list", token(iss, acme),
		`{"cluster":"`+bounded+`","namespace":"lux-chain"}`); code != http.StatusForbidden || !strings.Contains(body, `"OutOfBound"`) {
		t.Errorf("pods outside the bound: %d %s", code, body)
	}
	if code, _ := post(t, srv.Client(), srv.URL, k8s.Prefix+"/clusters/get", token(iss, "other"), `{"cluster":"`+whole+`"}`); code != http.StatusNotFound {
		t.Errorf("another org's cluster: %d, want 404", code)
	}
	if code, _ := post(t, srv.Client(), srv.URL, k8s.Prefix+"/secrets/get", token(iss, acme), `{}`); code != http.StatusNotFound {
		t.Errorf("secrets.get: %d, want 404 (no such op)", code)
	}
	big := `{"cluster":"` + strings.Repeat("x", 2<<20) + `"}`
	if code, _ := post(t, srv.Client(), srv.URL, k8s.Prefix+"/clusters/get", token(iss, acme), big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB body: %d, want 413", code)
	}

	sock := filepath.Join(t.TempDir(), "k8s.sock")
	l, err := k8s.ListenSocket(sock)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600 (%v)", fi.Mode().Perm(), err)
	}
	ss := &http.Server{Handler: h}
	go func() { _ = ss.Serve(l) }()
	defer ss.Close()
	uc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	if code, _ := post(t, uc, "http://socket", path, "", "{}"); code != http.StatusUnauthorized {
		t.Errorf("socket without a token: %d, want 401", code)
	}
	if code, body := post(t, uc, "http://socket", path, token(iss, acme), "{}"); code != http.StatusOK {
		t.Errorf("socket with a token: %d %s", code, body)
	}
}

// TestOpenAPIValidates: the generated document validates (kin-openapi) and holds one POST
// per op, its description the op's doc comment.
func TestOpenAPIValidates(t *testing.T) {
	setup(t)
	data, err := k8s.OpenAPI(env.plane)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document does not validate: %v", err)
	}
	if n := doc.Paths.Len(); n != len(ops.All) {
		t.Errorf("%d paths, want %d", n, len(ops.All))
	}
	for _, op := range ops.All {
		item := doc.Paths.Find(k8s.Prefix + "/" + string(op.Group) + "/" + op.Member())
		if item == nil || item.Post == nil || item.Post.Description != op.Doc() || op.Doc() == "" {
			t.Errorf("%s: no POST with its doc comment", op.Name)
		}
	}
	cordon := doc.Paths.Find(k8s.Prefix + "/nodes/cordon").Post
	props := cordon.RequestBody.Value.Content.Get("application/json").Schema.Value.Properties
	for _, f := range []string{"cluster", "node", "uncordon"} {
		if props[f] == nil {
			t.Errorf("nodes.cordon's request schema lacks %s: %v", f, props)
		}
	}
	wprops := doc.Paths.Find(k8s.Prefix + "/workloads/scale").Post.RequestBody.Value.Content.Get("application/json").Schema.Value.Properties
	for _, f := range []string{"cluster", "namespace", "kind", "name", "replicas"} {
		if wprops[f] == nil {
			t.Errorf("workloads.scale's request schema lacks %s (embedded WorkloadRef)", f)
		}
	}
}

type bearerTransport struct{ tok string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPListsToolsAndCordons: an MCP client (go-sdk, streamable HTTP with the bearer
// token) lists one tool per op with the op's doc comment, cordons the kwok node with
// nodes.cordon end to end, uncordons it, and gets a tool error naming OutOfBound for the
// bounded registration.
func TestMCPListsToolsAndCordons(t *testing.T) {
	setup(t)
	t.Cleanup(func() { uncordon(t) })
	iss, h := served(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + k8s.Prefix + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{tok: token(iss, acme)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != len(ops.All) {
		t.Errorf("%d tools, want %d", len(tools.Tools), len(ops.All))
	}
	docs := map[string]string{}
	for _, tl := range tools.Tools {
		docs[tl.Name] = tl.Description
	}
	for _, op := range ops.All {
		if docs[op.Name] != op.Doc() {
			t.Errorf("tool %s: description %q, want the op's doc comment", op.Name, docs[op.Name])
		}
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nodes.cordon", Arguments: map[string]any{"cluster": whole, "node": testbed.NodeName}})
	if err != nil {
		t.Fatal(err)
	}
	var rep ops.NodesCordonReply
	if res.IsError || json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &rep) != nil || !rep.Unschedulable {
		t.Fatalf("nodes.cordon over MCP: %+v", res.Content)
	}
	n, err := env.target.CoreV1().Nodes().Get(t.Context(), testbed.NodeName, metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Errorf("the node is not cordoned: %v", err)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nodes.cordon", Arguments: map[string]any{"cluster": whole, "node": testbed.NodeName, "uncordon": true}})
	if err != nil || res.IsError {
		t.Fatalf("uncordon over MCP: %v %+v", err, res)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nodes.cordon", Arguments: map[string]any{"cluster": bounded, "node": testbed.NodeName}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "OutOfBound") {
		t.Errorf("cordon of the bounded registration over MCP: %v %+v", err, res)
	}
}
