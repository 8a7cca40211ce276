package gitops

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openuniverse/operator/reconcile/apply"
)

// TestPublicError: an apiserver refusal keeps its code, reason, field paths and
// message, with every quoted value masked (a Secret's value can be echoed)
// and the message bounded; a field name after "field" stays readable.
func TestPublicError(t *testing.T) {
	long := strings.Repeat("é", 600)
	for _, tc := range []struct {
		name      string
		err       error
		want      []string
		notWanted []string
	}{
		{
			name: "invalid value masked",
			err: apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s",
				field.ErrorList{field.Invalid(field.NewPath("data").Key("k"), "hunter2-plaintext", "must be base64")}),
			want:      []string{"422 Invalid", "data[k] (FieldValueInvalid)", "must be base64", `"***"`},
			notWanted: []string{"hunter2-plaintext"},
		},
		{
			name:      "unknown field named",
			err:       apierrors.NewBadRequest(`.spec.replcas: field not declared in schema; strict decoding error: unknown field "spec.replcas"`),
			want:      []string{"400 BadRequest", `unknown field "spec.replcas"`, ".spec.replcas: field not declared"},
			notWanted: []string{"operator log has the message"},
		},
		{
			name: "an admission webhook's free text left out",
			err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 400, Reason: metav1.StatusReasonBadRequest,
				Message: `admission webhook "x" denied the request: value leaked-9 is not allowed`}},
			want:      []string{"400 BadRequest", "denied by admission"},
			notWanted: []string{"leaked-9"},
		},
		{
			name: "long message truncated on a rune",
			err:  apierrors.NewInternalError(errors.New(long)),
			want: []string{"500 InternalError", "…"},
		},
		{
			name:      "not an apiserver error keeps the sweep's words",
			err:       errors.New("secret token abc"),
			want:      []string{"the sweep's own"},
			notWanted: []string{"abc"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := publicError(tc.err, "the sweep's own")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, w := range tc.notWanted {
				if strings.Contains(got, w) {
					t.Errorf("%q holds %q", got, w)
				}
			}
			if !strings.HasSuffix(got, "…") && len(got) > 200+publicMessageMax {
				t.Errorf("unbounded: %d bytes", len(got))
			}
			if strings.ToValidUTF8(got, "?") != got {
				t.Errorf("cut inside a rune: %q", got)
			}
		})
	}
}

// TestPublicErrorFromTheAPIServer: a Deployment with a negative replica count,
// refused by the real apiserver's validation, reaches GET /gitops with the
// field path and the apiserver's words, not a bare status code.
func TestPublicErrorFromTheAPIServer(t *testing.T) {
	const ns = "public-error"
	src := newMemSource(map[string][]byte{
		"ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"),
		"deploy.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad, namespace: " + ns + "}\n" +
			"spec:\n  replicas: -1\n  selector: {matchLabels: {app: bad}}\n  template:\n    metadata: {labels: {app: bad}}\n" +
			"    spec: {containers: [{name: c, image: registry.example/c:1}]}\n"),
	})
	sw, _, _ := newTestSweeper(t, src, ns)
	r := sw.Sweep(context.Background())
	pub := r.Public()
	i := slices.IndexFunc(pub.Results, func(res apply.Result) bool { return res.Object.Kind == "Deployment" })
	if i < 0 || pub.Results[i].Action != apply.Failed {
		t.Fatalf("results %+v, want the Deployment failed", pub.Results)
	}
	msg := pub.Results[i].Message
	for _, w := range []string{"deploy.yaml: ", "spec.replicas", "greater than or equal to 0"} {
		if !strings.Contains(msg, w) {
			t.Errorf("GET /gitops message %q lacks %q", msg, w)
		}
	}
}
