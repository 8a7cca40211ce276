package image_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/upgrade/image"
)

// TestCommittedAlert: a pushed tag bump is alerted as news (not a warning), in the Event's
// words, keyed by the ImageUpdate and the tag, with the commit.
func TestCommittedAlert(t *testing.T) {
	cr := &v1.ImageUpdate{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
	out := image.Outcome{Reason: image.ReasonPushed, Current: "1.2.3", Latest: "1.2.4", Message: "pushed ghcr.io/x/web 1.2.3 -> 1.2.4 to main in 0123456789ab (1 attempt(s))",
		Pushed: &image.Push{Tag: "1.2.4", Commit: "0123456789abcdef"}}
	e := image.CommittedAlert(cr, out)
	if e.Kind != alert.ImageUpdateCommitted || e.Warning || e.Object != "ImageUpdate apps/web" || e.Revision != "0123456789abcdef" || e.Summary != out.Message {
		t.Fatalf("alert %+v", e)
	}
	out.Latest = "1.2.5"
	if e2 := image.CommittedAlert(cr, out); e2.Key == e.Key {
		t.Fatal("the next tag shares the key: it would be deduplicated")
	}
}
