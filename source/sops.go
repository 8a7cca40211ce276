package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/logging"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/sirupsen/logrus"
)

// Reasons a file is not decrypted, or a Secret not applied. Compare with
// errors.Is on FileError. Their messages never hold plaintext.
var (
	// ErrDecrypt marks a SOPS-encrypted file that could not be decrypted:
	// none of it is applied, the other files are.
	ErrDecrypt = errors.New("SOPS decryption failed")
	// ErrPlaintextSecret marks a Secret not encrypted with SOPS while
	// --gitops-require-encrypted-secrets is set.
	ErrPlaintextSecret = errors.New("plaintext Secret refused (--gitops-require-encrypted-secrets)")
)

func init() {
	// SOPS logs every decryption at Info on stderr; the operator has its own log.
	logging.SetLevel(logrus.WarnLevel)
}

// Decryptor decrypts SOPS documents in memory with age identities. The
// plaintext is returned to the caller only: never written, logged, or put in
// an error. A nil *Decryptor decrypts nothing: an encrypted file is then a
// FileError naming it.
type Decryptor struct {
	ids []age.Identity
}

// NewDecryptor parses age identities (AGE-SECRET-KEY-1... lines; blank
// lines and # comments ignored), as age-keygen writes them. Plugin and SSH
// identities are refused: they would run programs or read files. The error
// never holds the key.
func NewDecryptor(keys ...[]byte) (*Decryptor, error) {
	d := &Decryptor{}
	for _, k := range keys {
		sc := bufio.NewScanner(bytes.NewReader(k))
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !strings.HasPrefix(line, "AGE-SECRET-KEY-1") {
				return nil, fmt.Errorf("age key line %d is not an X25519 identity (AGE-SECRET-KEY-1...); plugin and SSH identities are not used", n)
			}
			id, err := age.ParseX25519Identity(line)
			if err != nil {
				return nil, fmt.Errorf("age key line %d is malformed", n)
			}
			d.ids = append(d.ids, id)
		}
	}
	if len(d.ids) == 0 {
		return nil, errors.New("no age identity (AGE-SECRET-KEY-1...) in the key data")
	}
	return d, nil
}

// sopsKey matches the top-level "sops:" key SOPS adds to a file it encrypted.
var sopsKey = regexp.MustCompile(`(?m)^sops:[ \t]*(#.*)?$`)

// IsEncrypted reports whether a YAML file was encrypted by SOPS.
func IsEncrypted(data []byte) bool { return sopsKey.Match(data) }

// Decrypt returns the plaintext of a SOPS-encrypted YAML file, after
// checking its MAC, as sops --decrypt would. The error says why without
// plaintext.
func (d *Decryptor) Decrypt(data []byte) ([]byte, error) {
	if d == nil || len(d.ids) == 0 {
		return nil, fmt.Errorf("%w: the file is encrypted and no age key is configured (--gitops-sops-age-secret)", ErrDecrypt)
	}
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{})
	tree, err := store.LoadEncryptedFile(data)
	if err != nil {
		return nil, fmt.Errorf("%w: not a valid SOPS file", ErrDecrypt)
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(ageServer{d.ids})}, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: none of the configured age keys opens the file's data key (is it encrypted to one of their recipients?)", ErrDecrypt)
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, fmt.Errorf("%w: a value does not decrypt with the data key", ErrDecrypt)
	}
	want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil || want != mac {
		return nil, fmt.Errorf("%w: the MAC does not match: the file was changed after it was encrypted", ErrDecrypt)
	}
	out, err := store.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, fmt.Errorf("%w: the decrypted tree does not serialise", ErrDecrypt)
	}
	return out, nil
}

// ageServer is a SOPS key service that opens data keys with the given age
// identities only: no KMS, no PGP, no identities read from disk or the
// environment.
type ageServer struct{ ids []age.Identity }

func (s ageServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	k := req.GetKey().GetAgeKey()
	if k == nil {
		return nil, errors.New("only age keys are configured")
	}
	mk := &sopsage.MasterKey{Recipient: k.Recipient, EncryptedKey: string(req.Ciphertext)}
	sopsage.ParsedIdentities(s.ids).ApplyToMasterKey(mk)
	pt, err := mk.Decrypt()
	if err != nil {
		return nil, errors.New("age decryption failed")
	}
	return &keyservice.DecryptResponse{Plaintext: pt}, nil
}

func (s ageServer) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("the operator never encrypts")
}

// Secrets says how a parse treats SOPS documents and plaintext Secrets.
type Secrets struct {
	// Decryptor decrypts SOPS-encrypted files; nil: an encrypted file is a
	// FileError naming it.
	Decryptor *Decryptor
	// RequireEncrypted refuses, by name, a Secret from a file not encrypted
	// with SOPS (and a kustomization's secretGenerator).
	RequireEncrypted bool
}

// parseFile parses a plain file, decrypting it first when SOPS encrypted
// it; a file that does not decrypt is one FileError and none of it is
// applied.
func (sec Secrets) parseFile(f File, docs int) ([]Object, []FileError) {
	data, encrypted, err := sec.open(f.Data)
	if err != nil {
		return nil, []FileError{{File: f.Path, Err: err}}
	}
	objs, errs := parseFile(f.Path, data, docs)
	if encrypted || !sec.RequireEncrypted {
		return objs, errs
	}
	kept := objs[:0:0]
	for _, o := range objs {
		if isSecret(o) {
			errs = append(errs, FileError{File: f.Path, Doc: o.Doc, Err: plaintextSecret(f.Path, o)})
			continue
		}
		kept = append(kept, o)
	}
	return kept, errs
}

// open returns the plaintext of data, decrypted when SOPS encrypted it.
func (sec Secrets) open(data []byte) (plain []byte, encrypted bool, err error) {
	if !IsEncrypted(data) {
		return data, false, nil
	}
	plain, err = sec.Decryptor.Decrypt(data)
	return plain, true, err
}

func isSecret(o Object) bool {
	return o.Obj.GetKind() == "Secret" && o.Obj.GetAPIVersion() == "v1"
}

func plaintextSecret(file string, o Object) error {
	return fmt.Errorf("%w: Secret %s/%s in %s is not encrypted with SOPS", ErrPlaintextSecret, o.Obj.GetNamespace(), o.Obj.GetName(), file)
}
