package e2e

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// secrets are every credential the suite hands an operator (git passwords, webhook
// secrets, bearer tokens, Secret data): when an operator stops, its log, its last
// GET /gitops report, every Event and the status of every custom resource in the cluster
// are grepped for them, in the encodings a leak would take.
var secrets struct {
	mu     sync.Mutex
	values []string
}

// noteSecret records credentials no operator output may contain. Values shorter than 8
// bytes are too common to grep for and are not recorded.
func noteSecret(vs ...string) {
	secrets.mu.Lock()
	defer secrets.mu.Unlock()
	for _, v := range vs {
		if v = strings.TrimSpace(v); len(v) >= 8 && !slices.Contains(secrets.values, v) {
			secrets.values = append(secrets.values, v)
		}
	}
}

// secretForms are the shapes a leaked secret takes: as is, base64 (padded, unpadded,
// URL-safe), hex, URL-escaped, and inside an HTTP basic-auth header.
func secretForms(v string) map[string]string {
	forms := map[string]string{
		"raw":                v,
		"base64":             base64.StdEncoding.EncodeToString([]byte(v)),
		"base64 unpadded":    base64.RawStdEncoding.EncodeToString([]byte(v)),
		"base64url":          base64.RawURLEncoding.EncodeToString([]byte(v)),
		"hex":                hex.EncodeToString([]byte(v)),
		"url-escaped":        url.QueryEscape(v),
		"basic auth (git)":   base64.StdEncoding.EncodeToString([]byte("git:" + v)),
		"basic auth (empty)": base64.StdEncoding.EncodeToString([]byte(":" + v)),
	}
	return forms
}

// leaks returns a description of each recorded secret found in text (never the secret).
func leaks(text string) []string {
	secrets.mu.Lock()
	values := slices.Clone(secrets.values)
	secrets.mu.Unlock()
	var out []string
	for i, v := range values {
		for form, s := range secretForms(v) {
			if strings.Contains(text, s) {
				out = append(out, fmt.Sprintf("secret #%d (%d bytes, %.3s…) as %s", i, len(v), v, form))
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkNoSecrets fails t when text (what names it) holds a recorded secret.
func checkNoSecrets(t testing.TB, what, text string) {
	t.Helper()
	for _, l := range leaks(text) {
		t.Errorf("token grep: %s holds %s", what, l)
	}
}

// checkClusterNoSecrets greps every Event and the status of every custom resource.
func checkClusterNoSecrets(t testing.TB, cl *cluster) {
	t.Helper()
	ctx := context.Background()
	evs := &corev1.EventList{}
	if err := cl.c.List(ctx, evs); err != nil {
		t.Errorf("token grep: list events: %v", err)
	} else {
		for _, e := range evs.Items {
			b, _ := json.Marshal(e)
			checkNoSecrets(t, fmt.Sprintf("Event %s/%s (%s on %s %s)", e.Namespace, e.Name, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name), string(b))
		}
	}
	crds := &unstructured.UnstructuredList{}
	crds.SetAPIVersion("apiextensions.k8s.io/v1")
	crds.SetKind("CustomResourceDefinitionList")
	if err := cl.c.List(ctx, crds); err != nil {
		t.Errorf("token grep: list CRDs: %v", err)
		return
	}
	n := 0
	for _, u := range crds.Items {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			t.Errorf("token grep: %s: %v", u.GetName(), err)
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Storage {
				continue
			}
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion(crd.Spec.Group + "/" + v.Name)
			l.SetKind(crd.Spec.Names.ListKind)
			if err := cl.c.List(ctx, l); err != nil {
				continue // not served (yet, or any more): nothing to grep
			}
			for _, o := range l.Items {
				n++
				if st, ok := o.Object["status"]; ok {
					b, _ := json.Marshal(st)
					checkNoSecrets(t, fmt.Sprintf("status of %s %s/%s", crd.Spec.Names.Kind, o.GetNamespace(), o.GetName()), string(b))
				}
			}
		}
	}
	t.Logf("token grep: %d secrets over %d events and the status of %d custom resources", len(secrets.values), len(evs.Items), n)
}

// TestTokenGrepFindsEncodedTokens: the grep itself finds a token in each of the shapes it
// claims, and nothing in text without one.
func TestTokenGrepFindsEncodedTokens(t *testing.T) {
	const tok = "grep-self-test-token-6a1f"
	noteSecret(tok)
	for form, s := range secretForms(tok) {
		if got := leaks(`{"msg":"x","error":"Authorization: Basic ` + s + `"}`); len(got) == 0 {
			t.Errorf("the %s form is not found", form)
		}
	}
	if got := leaks(`{"msg":"Sweep complete","revision":"0123456789abcdef"}`); len(got) != 0 {
		t.Errorf("found %v in text without a token", got)
	}
}
