package gitops

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
)

// TestGitOpsEndpointCarriesNoData: GET /gitops serves the apiserver's code,
// reason and cause fields of a failure and its message with quoted values
// masked, never an admission webhook's words (which can echo a value), and a
// parser's line, never its message (which can quote a key).
func TestGitOpsEndpointCarriesNoData(t *testing.T) {
	const leak = "s3cr3t-value-9d1e"
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", field.ErrorList{
		field.Invalid(field.NewPath("data", "password"), leak, "must be base64"),
	})
	denied := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 400, Reason: metav1.StatusReasonBadRequest,
		Message: "admission webhook \"x\" denied the request: value " + leak + " is not allowed"}}
	sw := &Sweeper{}
	sw.last = &Report{
		Results: []apply.Result{
			{Object: apply.ObjRef{Kind: "Secret", Namespace: "a", Name: "db"}, Action: apply.Failed, Err: invalid, Message: invalid.Error()},
			{Object: apply.ObjRef{Kind: "ConfigMap", Namespace: "a", Name: "c"}, Action: apply.Failed, Err: denied, Message: denied.Error()},
			{Object: apply.ObjRef{Kind: "ConfigMap", Namespace: "a", Name: "n"}, Action: apply.Failed, Err: fmt.Errorf("no API serves x"), Message: "no API serves x"},
		},
		Skips: []Skip{{File: "bad.yaml", Reason: ReasonUnparseable,
			Message: "not applied, none of this file is: malformed yaml: yaml: line 4: invalid map key: map[interface {}]interface {}{\"" + leak + "\":1}"},
			fileSkip(source.FileError{File: "big.yaml", Err: source.TooLarge(20<<20, 10<<20)}),
			fileSkip(source.FileError{File: "wide.yaml", Err: fmt.Errorf("%w: %w", source.ErrMalformed, source.ErrNotUTF8)}),
		},
		Files: map[apply.ObjRef]string{{Kind: "Secret", Namespace: "a", Name: "db"}: "crs/db.yaml"},
	}
	rec := httptest.NewRecorder()
	sw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/gitops", nil))
	body := rec.Body.String()
	if strings.Contains(body, leak) {
		t.Fatalf("GET /gitops carries data:\n%s", body)
	}
	var got Report
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"422 Invalid: data.password (FieldValueInvalid): Secret \"***\" is invalid: data.password: Invalid value: \"***\": must be base64", "400 BadRequest", "no API serves x"} {
		if !strings.Contains(got.Results[i].Message, want) {
			t.Errorf("result %d: %q, want it to say %q", i, got.Results[i].Message, want)
		}
	}
	if !strings.Contains(got.Skips[0].Message, "line 4") {
		t.Errorf("skip: %q, want the line", got.Skips[0].Message)
	}
	if !strings.HasPrefix(got.Results[0].Message, "crs/db.yaml: ") {
		t.Errorf("failed result: %q, want it to start with the file", got.Results[0].Message)
	}
	// A limit or an encoding is the operator's own wording: served as is, not as "malformed".
	for i, want := range map[int]string{1: "file too large: 20971520 bytes", 2: "not UTF-8"} {
		if m := got.Skips[i].Message; !strings.Contains(m, want) || strings.Contains(m, "operator log has") {
			t.Errorf("skip %d: %q, want it to say %q", i, m, want)
		}
	}
	// the kept report is unchanged: the log still has the messages
	if !strings.Contains(sw.Last().Results[0].Message, leak) {
		t.Error("Public modified the kept report")
	}
}

func TestManagerLabelIsBounded(t *testing.T) {
	for in, want := range map[string]string{
		"kubectl-client-side-apply": "kubectl", "kubectl-edit": "kubectl", "kubectl": "kubectl",
		"helm": "helm", kinds.ManagerKinds: kinds.ManagerKinds,
		"evil-" + strings.Repeat("x", 100): "other", "": "other",
	} {
		if got := ManagerLabel(in); got != want {
			t.Errorf("ManagerLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
