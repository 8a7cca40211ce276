package source_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/sopstest"
)

const sopsPlaintext = "s3cr3t-pl41nt3xt-t0k3n"

func encryptedSecret(t *testing.T, recipient, name string) []byte {
	t.Helper()
	enc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: "+name+"\n  namespace: ns\nstringData:\n  token: "+sopsPlaintext+"\n"), recipient)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc, []byte(sopsPlaintext)) || !source.IsEncrypted(enc) {
		t.Fatalf("encryption left the plaintext or no sops key:\n%s", enc)
	}
	return enc
}

func TestParseDecryptsSOPS(t *testing.T) {
	id, recipient := sopstest.Key()
	_, other := sopstest.Key()
	dec, err := source.NewDecryptor([]byte("# created by age-keygen\n" + id + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(encryptedSecret(t, recipient, "tampered"), []byte("name: tampered"), []byte("name: tamperex"), 1)
	files := map[string][]byte{
		"a/secret.yaml":        encryptedSecret(t, recipient, "plain-sops"),
		"b/other-key.yaml":     encryptedSecret(t, other, "wrong-key"),
		"c/tampered.yaml":      tampered,
		"d/plain.yaml":         []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: plaintext, namespace: ns}\nstringData: {token: " + sopsPlaintext + "}\n"),
		"d/cm.yaml":            []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: ns}\n"),
		"k/kustomization.yaml": []byte("namespace: ns\nresources: [secret.yaml]\n"),
		"k/secret.yaml":        encryptedSecret(t, recipient, "in-kustomization"),
	}
	snap := &source.Snapshot{}
	for _, p := range []string{"a/secret.yaml", "b/other-key.yaml", "c/tampered.yaml", "d/cm.yaml", "d/plain.yaml", "k/kustomization.yaml", "k/secret.yaml"} {
		snap.Files = append(snap.Files, source.File{Path: p, Data: files[p]})
	}
	for _, require := range []bool{false, true} {
		objs, errs := source.ParseSecrets(snap, source.Limits{}, source.Secrets{Decryptor: dec, RequireEncrypted: require})
		got := map[string]string{}
		for _, o := range objs {
			tok, _, _ := unstructuredString(o.Obj.Object, "stringData", "token")
			got[o.Obj.GetName()] = tok
		}
		if got["plain-sops"] != sopsPlaintext || got["in-kustomization"] != sopsPlaintext {
			t.Errorf("require=%v: decrypted %v, want plain-sops and in-kustomization with the plaintext", require, got)
		}
		if _, ok := got["cm"]; !ok {
			t.Errorf("require=%v: the ConfigMap beside a bad file is lost: %v", require, got)
		}
		if _, ok := got["plaintext"]; ok == require {
			t.Errorf("require=%v: plaintext Secret applied = %v", require, ok)
		}
		named := map[string]error{}
		for _, e := range errs {
			named[e.File] = e
			if strings.Contains(e.Error(), sopsPlaintext) {
				t.Errorf("error shows the plaintext: %v", e)
			}
		}
		for _, f := range []string{"b/other-key.yaml", "c/tampered.yaml"} {
			if !errors.Is(named[f], source.ErrDecrypt) {
				t.Errorf("require=%v: %s: error %v, want ErrDecrypt naming it", require, f, named[f])
			}
		}
		if require && !errors.Is(named["d/plain.yaml"], source.ErrPlaintextSecret) {
			t.Errorf("plaintext Secret: error %v, want ErrPlaintextSecret", named["d/plain.yaml"])
		}
		if len(errs) != 2+map[bool]int{false: 0, true: 1}[require] {
			t.Errorf("require=%v: errors %v", require, errs)
		}
	}
	// Without keys an encrypted file is named, never applied as ciphertext.
	objs, errs := source.Parse(snap)
	for _, o := range objs {
		if o.Obj.GetKind() == "Secret" && o.Obj.GetName() != "plaintext" {
			t.Errorf("without keys %s was applied", o.Obj.GetName())
		}
	}
	if len(errs) != 4 {
		t.Errorf("without keys: %d errors, want the 4 encrypted files named: %v", len(errs), errs)
	}
}

func TestNewDecryptorRefusesPluginsAndNeverEchoesKeys(t *testing.T) {
	for _, key := range []string{"AGE-PLUGIN-YUBIKEY-1QQQ", "ssh-ed25519 AAAA", "AGE-SECRET-KEY-1NOTAKEY", ""} {
		_, err := source.NewDecryptor([]byte(key))
		if err == nil {
			t.Errorf("%q accepted", key)
		} else if key != "" && strings.Contains(err.Error(), key) {
			t.Errorf("error echoes the key: %v", err)
		}
	}
}

func unstructuredString(m map[string]any, fields ...string) (string, bool, error) {
	for _, f := range fields[:len(fields)-1] {
		m, _ = m[f].(map[string]any)
	}
	s, ok := m[fields[len(fields)-1]].(string)
	return s, ok, nil
}
