package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/source/alert"
)

// readAlertsSecret reads the alert targets from the Secret --alerts-secret names in the
// operator's namespace, once. A missing Secret, or one FromSecret refuses, is an error that
// names the Secret (and the key), never a value.
func readAlertsSecret(ctx context.Context, c client.Reader, namespace, name string) (alert.Config, error) {
	ref := namespace + "/" + name
	sec := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return alert.Config{}, fmt.Errorf("--alerts-secret %s: the Secret does not exist", ref)
		}
		return alert.Config{}, fmt.Errorf("--alerts-secret %s: read: %s", ref, apierrors.ReasonForError(err))
	}
	cfg, err := alert.FromSecret(ref, sec.Data)
	if err != nil {
		return alert.Config{}, fmt.Errorf("--alerts-secret: %w", err)
	}
	return cfg, nil
}

// setupAlerts starts the alert sink of --alerts-secret and keeps it in o.alerts, for the
// loops to alert through; without the flag there is none. The git token is masked in every
// payload, as the sink's own URLs and key are.
func setupAlerts(mgr ctrl.Manager, c client.Reader, o *runOptions, log logr.Logger) error {
	if o.AlertsSecret == "" {
		log.Info("alerts off: no --alerts-secret")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := readAlertsSecret(ctx, c, o.Namespace, o.AlertsSecret)
	if err != nil {
		return err
	}
	if tf, err := o.Source.Credentials(); err == nil && tf != nil {
		cfg.Mask = append(cfg.Mask, tf.Token())
	}
	sink, err := alert.New(cfg, log)
	if err != nil {
		return fmt.Errorf("--alerts-secret %s/%s: %w", o.Namespace, o.AlertsSecret, err)
	}
	if err := mgr.Add(sink); err != nil {
		return err
	}
	o.alerts = sink
	return nil
}

// alertHook is o's alert hook, or nil (never a nil *alert.Sink in a non-nil interface).
func (o *runOptions) alertHook() alert.Hook {
	if o.alerts == nil {
		return nil
	}
	return o.alerts
}
