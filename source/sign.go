package source

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// SigningEntity reads the armored OpenPGP private key of a Change (a Secret's git.asc),
// decrypting it with pass when it is encrypted. Errors never quote key material.
func SigningEntity(armored []byte, pass Token) (*openpgp.Entity, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	if len(ring) == 0 || ring[0].PrivateKey == nil {
		return nil, errors.New("read signing key: no private key")
	}
	e := ring[0]
	if e.PrivateKey.Encrypted {
		if pass.IsZero() {
			return nil, errors.New("signing key is encrypted and no passphrase is set")
		}
		if err := e.PrivateKey.Decrypt([]byte(pass.Reveal())); err != nil {
			return nil, errors.New("signing key: wrong passphrase")
		}
	}
	return e, nil
}
