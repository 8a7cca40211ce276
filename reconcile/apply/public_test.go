package apply_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openuniverse/operator/kinds/condition"
	"github.com/openuniverse/operator/reconcile/apply"
)

// TestPublicError: an apiserver refusal keeps its code, reason, field paths and
// message, with every quoted value masked (a Secret's value can be echoed)
// and the message bounded; a field name after "field" stays readable. PublicMessage
// (GET /gitops, Events, conditions of a refused child) and PublicError (a step's error,
// its context kept) mask alike.
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
			want:      []string{"must be base64", `"***"`},
			notWanted: []string{"hunter2-plaintext"},
		},
		{
			name:      "unknown field named",
			err:       apierrors.NewBadRequest(`.spec.replcas: field not declared in schema; strict decoding error: unknown field "spec.replcas"`),
			want:      []string{`unknown field "spec.replcas"`, ".spec.replcas: field not declared"},
			notWanted: []string{"operator log has the message"},
		},
		{
			name: "an admission webhook's free text left out",
			err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 400, Reason: metav1.StatusReasonBadRequest,
				Message: `admission webhook "x" denied the request: value leaked-9 is not allowed`}},
			want:      []string{"denied by admission"},
			notWanted: []string{"leaked-9"},
		},
		{
			name: "long message truncated on a rune",
			err:  apierrors.NewInternalError(errors.New(long)),
			want: []string{"…"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("list Secret in ns: %w", tc.err)
			check := func(what, got string, want []string) {
				for _, w := range want {
					if !strings.Contains(got, w) {
						t.Errorf("%s %q lacks %q", what, got, w)
					}
				}
				for _, w := range tc.notWanted {
					if strings.Contains(got, w) {
						t.Errorf("%s %q holds %q", what, got, w)
					}
				}
				if !strings.HasSuffix(got, "…") && len(got) > 200+apply.PublicMessageMax {
					t.Errorf("%s unbounded: %d bytes", what, len(got))
				}
				if strings.ToValidUTF8(got, "?") != got {
					t.Errorf("%s cut inside a rune: %q", what, got)
				}
			}
			st := tc.err.(apierrors.APIStatus).Status()
			code := fmt.Sprintf("%d %s", st.Code, st.Reason)
			check("PublicMessage", apply.PublicMessage(tc.err, "the sweep's own"), append([]string{"the apiserver refused the apply: " + code}, tc.want...))
			pe := apply.PublicError(wrapped)
			check("PublicError", pe.Error(), append([]string{"list Secret in ns: "}, tc.want...))
			if c, r := condition.ClassOf(pe); c != apply.ClassOf(tc.err) || r == "" {
				t.Errorf("PublicError class %v %q, want %v", c, r, apply.ClassOf(tc.err))
			}
		})
	}
	if got := apply.PublicMessage(errors.New("secret token abc"), "the sweep's own"); got != "the sweep's own" {
		t.Errorf("not an apiserver error: %q, want the caller's words", got)
	}
	if plain := errors.New("build: no image"); apply.PublicError(plain) != plain {
		t.Errorf("an error without an apiserver status is changed")
	}
	fields := apply.PublicMessage(apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s",
		field.ErrorList{field.Invalid(field.NewPath("data").Key("k"), "v", "bad")}), "")
	if !strings.Contains(fields, "422 Invalid: data[k] (FieldValueInvalid)") {
		t.Errorf("%q lacks the cause's field path", fields)
	}
}
