package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Credential is a resolved kubeconfig. Version changes whenever the stored material does
// (a Secret's resourceVersion), so a cached client is dropped on rotation.
type Credential struct {
	Kubeconfig []byte
	Version    string
}

// CredentialStore resolves a derived ref, acting as caller: the store re-applies its own
// per-org rule (a ref outside the caller's orgs/<org>/ is refused whatever asks for it).
// SecretStore is the Kubernetes Secret backend; a KMS backend implements the same method
// with the ref as its path.
type CredentialStore interface {
	Credential(ctx context.Context, caller Caller, ref CredentialRef) (Credential, error)
}

// ErrNoCredential: nothing is stored at the ref.
var ErrNoCredential = errors.New("no credential stored")

// SecretKey is the key of the kubeconfig in a credential Secret.
const SecretKey = "kubeconfig"

// SecretName is the fixed name of the Secret holding ref in the operator's namespace:
// "fleet-" and the first 40 hex digits of the ref's SHA-256 (a ref holds '/' and may be
// longer than a name; the hash keeps distinct refs in distinct Secrets). Print it with
//
//	printf %s orgs/<org>/k8s/clusters/<name>/kubeconfig | sha256sum | cut -c1-40
func SecretName(ref CredentialRef) string {
	sum := sha256.Sum256([]byte(ref))
	return "fleet-" + hex.EncodeToString(sum[:])[:40]
}

// SecretStore keeps credentials as Secrets in the operator's namespace, one per ref, named
// SecretName(ref), the kubeconfig under SecretKey. No field of a registration names the
// Secret. Reader may be a cache limited to Namespace.
type SecretStore struct {
	Reader    client.Reader
	Namespace string
}

// Credential reads the Secret of ref, refusing a ref outside the caller's org.
func (s SecretStore) Credential(ctx context.Context, caller Caller, ref CredentialRef) (Credential, error) {
	org, ok := ref.Org()
	switch {
	case !ok:
		return Credential{}, fmt.Errorf("credential %s: not a cluster credential ref", ref)
	case caller.org == "" || org != caller.org:
		return Credential{}, fmt.Errorf("credential %s: refused to org %q (the store serves each org its own refs only)", ref, caller.org)
	case s.Namespace == "":
		return Credential{}, fmt.Errorf("credential %s: the secret store has no namespace", ref)
	}
	var sec corev1.Secret
	key := types.NamespacedName{Namespace: s.Namespace, Name: SecretName(ref)}
	if err := s.Reader.Get(ctx, key, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return Credential{}, fmt.Errorf("credential %s: %w (Secret %s, key %s)", ref, ErrNoCredential, key, SecretKey)
		}
		return Credential{}, fmt.Errorf("credential %s: read Secret %s: %w", ref, key, err)
	}
	data := sec.Data[SecretKey]
	if len(data) == 0 {
		return Credential{}, fmt.Errorf("credential %s: %w (Secret %s has no key %s)", ref, ErrNoCredential, key, SecretKey)
	}
	return Credential{Kubeconfig: data, Version: sec.ResourceVersion}, nil
}
