package main

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/source/alert"
)

// TestAlertsSecret reads --alerts-secret from the real apiserver: a good Secret gives its
// targets; a missing Secret and one missing a key refuse start, naming the Secret and the
// key and never a value.
func TestAlertsSecret(t *testing.T) {
	cfg := testbed.APIServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns = "alerts-home"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const hookURL, key = "https://hooks.example.com/in/SECRETPATH", "SECRETKEY-0123456789abcdef"
	for name, data := range map[string]map[string]string{
		"good":    {alert.KeySlackURL: "https://hooks.slack.com/services/T/B/SECRETSLACK", alert.KeyWebhookURL: hookURL, alert.KeyWebhookKey: key},
		"no-hmac": {alert.KeyWebhookURL: hookURL},
	} {
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readAlertsSecret(ctx, c, ns, "good")
	if err != nil {
		t.Fatal(err)
	}
	if got.SlackURL.Reveal() != "https://hooks.slack.com/services/T/B/SECRETSLACK" || got.WebhookURL.Reveal() != hookURL || got.WebhookKey.Reveal() != key {
		t.Fatal("the targets are not the Secret's")
	}
	if _, err := alert.New(got, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"absent":  "--alerts-secret alerts-home/absent: the Secret does not exist",
		"no-hmac": "--alerts-secret: alerts Secret alerts-home/no-hmac: key webhook-hmac-key: missing",
	} {
		_, err := readAlertsSecret(ctx, c, ns, name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %v, want %q", name, err, want)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Fatalf("%s: the error echoes a value: %v", name, err)
		}
	}
}
