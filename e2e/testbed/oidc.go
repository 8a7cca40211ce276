package testbed

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// OIDCIssuer is an OpenID Connect issuer on loopback for tests: discovery, a JWKS with one
// RSA key, and an authorization-code endpoint pair with PKCE (S256) that signs in Login
// without a prompt. Tokens are real RS256 JWTs signed with the issuer's key.
type OIDCIssuer struct {
	Server *httptest.Server
	URL    string
	key    *rsa.PrivateKey
	signer jose.Signer

	mu sync.Mutex
	// Login are the claims the authorization endpoint signs in (sub, org, groups, …).
	Login map[string]any
	// ClientID is the only client the token endpoint serves.
	ClientID string
	codes    map[string]codeGrant
	// Exchanges counts successful code exchanges.
	Exchanges int
}

type codeGrant struct {
	challenge, redirect string
}

// NewOIDCIssuer starts an issuer; Close it when done.
func NewOIDCIssuer(clientID string) (*OIDCIssuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "test-1"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	o := &OIDCIssuer{key: key, signer: signer, ClientID: clientID, codes: map[string]codeGrant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", o.discovery)
	mux.HandleFunc("GET /keys", o.jwks)
	mux.HandleFunc("GET /authorize", o.authorize)
	mux.HandleFunc("POST /token", o.token)
	o.Server = httptest.NewServer(mux)
	o.URL = o.Server.URL
	return o, nil
}

// Close stops the server.
func (o *OIDCIssuer) Close() { o.Server.Close() }

func (o *OIDCIssuer) discovery(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"issuer": o.URL, "jwks_uri": o.URL + "/keys",
		"authorization_endpoint": o.URL + "/authorize", "token_endpoint": o.URL + "/token",
		"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (o *OIDCIssuer) jwks(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &o.key.PublicKey, KeyID: "test-1", Algorithm: "RS256", Use: "sig"}}})
}

// Token signs claims with the issuer's key. Missing iss, iat and exp are filled in (exp one
// hour ahead); pass them to override.
func (o *OIDCIssuer) Token(claims map[string]any) string {
	c := map[string]any{"iss": o.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	payload, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	jws, err := o.signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return s
}

// UnsignedToken is the same claims with alg "none" and no signature.
func (o *OIDCIssuer) UnsignedToken(claims map[string]any) string {
	c := map[string]any{"iss": o.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	header, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	payload, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
}

// authorize signs in Login at once and redirects back with a code.
func (o *OIDCIssuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != o.ClientID || q.Get("response_type") != "code" {
		http.Error(w, "bad client or response type", http.StatusBadRequest)
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	code := randomCode()
	o.mu.Lock()
	o.codes[code] = codeGrant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
	o.mu.Unlock()
	u, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// token redeems a code once, checking the PKCE verifier against the challenge.
func (o *OIDCIssuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	clientID := r.Form.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok {
		clientID = id
	}
	o.mu.Lock()
	grant, ok := o.codes[r.Form.Get("code")]
	delete(o.codes, r.Form.Get("code"))
	login := o.Login
	o.mu.Unlock()
	sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
	switch {
	case !ok, clientID != o.ClientID, r.Form.Get("redirect_uri") != grant.redirect:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
		return
	case base64.RawURLEncoding.EncodeToString(sum[:]) != grant.challenge:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"PKCE verifier mismatch"}`))
		return
	}
	claims := map[string]any{"aud": o.ClientID}
	for k, v := range login {
		claims[k] = v
	}
	o.mu.Lock()
	o.Exchanges++
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": randomCode(), "token_type": "Bearer", "expires_in": 3600,
		"id_token": o.Token(claims)})
}

func randomCode() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("random: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
