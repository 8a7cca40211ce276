// Package sopstest encrypts YAML with SOPS and age for tests, as
// `sops --encrypt --age RECIPIENT` does, without the sops binary.
package sopstest

import (
	"fmt"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// Key returns a new age identity: the key file's line and its recipient.
func Key() (identity, recipient string) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		panic(err)
	}
	return id.String(), id.Recipient().String()
}

// Encrypt encrypts a YAML file to recipient, every value but those of
// apiVersion, kind and metadata (sops' --encrypted-regex '^(data|stringData)$').
func Encrypt(plain []byte, recipient string) ([]byte, error) {
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{})
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	mk, err := sopsage.MasterKeyFromRecipient(recipient)
	if err != nil {
		return nil, err
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups: []sops.KeyGroup{{mk}}, EncryptedRegex: "^(data|stringData)$", Version: "3.13.3",
	}}
	key, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		return nil, fmt.Errorf("data key: %v", errs)
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(key, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	if tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, key, tree.Metadata.LastModified.Format(time.RFC3339)); err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}
