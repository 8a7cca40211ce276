package gitops

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/source"
)

// bindSOPSFlags registers the flags of SOPS decryption.
func (o *Options) bindSOPSFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.SOPSAgeSecret, "gitops-sops-age-secret", o.SOPSAgeSecret,
		"Secret (NAME in the operator's namespace, or NAMESPACE/NAME) whose data values hold age identities (AGE-SECRET-KEY-1...) that decrypt SOPS-encrypted files from git, in memory; read once, restart to rotate.")
	fs.BoolVar(&o.RequireEncryptedSecrets, "gitops-require-encrypted-secrets", o.RequireEncryptedSecrets,
		"Refuse, by name, every Secret from git not encrypted with SOPS (and a kustomization's secretGenerator).")
}

// sopsKeys makes the parse's Secrets once: the age identities of the
// Secret --gitops-sops-age-secret names, read with one GET on the first
// sweep that parses (never again: an idle sweep stays at zero requests).
// An unreadable Secret fails the sweep, naming it; the keys never appear in
// an error, a log or a report.
func (s *Sweeper) sopsKeys(ctx context.Context) error {
	if s.sopsSecret == "" || s.parser.Secrets.Decryptor != nil {
		return nil
	}
	ref := types.NamespacedName{Namespace: s.scope.self.Namespace, Name: s.sopsSecret}
	if ns, name, ok := strings.Cut(s.sopsSecret, "/"); ok {
		ref = types.NamespacedName{Namespace: ns, Name: name}
	}
	var sec corev1.Secret
	if err := s.keys.Get(ctx, ref, &sec); err != nil {
		return fmt.Errorf("--gitops-sops-age-secret %s: %w", ref, client.IgnoreNotFound(err))
	}
	var keys [][]byte
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		keys = append(keys, sec.Data[k])
	}
	d, err := source.NewDecryptor(keys...)
	if err != nil {
		return fmt.Errorf("--gitops-sops-age-secret %s: %w", ref, err)
	}
	s.parser.Secrets.Decryptor = d
	return nil
}
