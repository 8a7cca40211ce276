package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

// Prefix is where the plane's routes live.
const Prefix = "/v1/k8s"

// Verifier turns a bearer token into its caller; every failure is Unauthenticated.
type Verifier interface {
	Verify(ctx context.Context, raw string) (Caller, error)
}

// OIDC is the deploy plane's authenticator as a Verifier: the same issuer, audience and org
// claim rules (drive/plane/deploy.Authenticator), one OIDC implementation.
type OIDC struct{ A *deploy.Authenticator }

// Verify checks the token's signature, issuer, audience and expiry; the org is its org claim.
func (o OIDC) Verify(ctx context.Context, raw string) (Caller, error) {
	id, err := o.A.Verify(ctx, raw)
	if err != nil {
		return Caller{}, err
	}
	return Caller{Subject: id.Subject, Name: id.Name, Org: id.Org}, nil
}

// bearer is the Authorization header's token: never a query parameter or a cookie.
func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

type callerKey struct{}

// CallerFrom is the caller the HTTP face authenticated (the MCP face reads it).
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Handler serves the plane: POST /v1/k8s/{group}/{member} with the op's JSON request,
// GET /v1/k8s/openapi.json, and the MCP endpoint /v1/k8s/mcp. Every route but the OpenAPI
// document needs a bearer token v verifies.
func (p *Plane) Handler(v Verifier, log logr.Logger) http.Handler {
	mux := http.NewServeMux()
	doc, docErr := OpenAPI(p)
	mux.HandleFunc("GET "+Prefix+"/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		if docErr != nil {
			writeError(w, errorf(CodeFailed, "openapi: %v", docErr))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			raw := bearer(r)
			if raw == "" {
				writeError(w, errorf(CodeUnauthenticated, "no bearer token"))
				return
			}
			c, err := v.Verify(r.Context(), raw)
			if err != nil {
				log.V(1).Info("token refused", "reason", err.Error())
				writeError(w, errorf(CodeUnauthenticated, "no valid bearer token"))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
		})
	}
	mux.Handle("POST "+Prefix+"/{group}/{member}", auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := CallerFrom(r.Context())
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.opts.MaxBodyBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeError(w, errorf(CodeTooLarge, "request body over %d bytes", p.opts.MaxBodyBytes))
			return
		case err != nil:
			writeError(w, badf("read the request: %v", err))
			return
		}
		rep, err := p.Call(r.Context(), c, r.PathValue("group")+"."+r.PathValue("member"), body)
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})))
	mux.Handle(Prefix+"/mcp", auth(p.MCPHandler()))
	return mux
}

func writeError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = errorf(CodeFailed, "%v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	if e.Code == CodeRateLimited {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(Status(e.Code))
	_ = json.NewEncoder(w).Encode(ops.Error{Code: e.Code, Message: e.Msg})
}

// Server runs the plane's HTTP listener and, when Socket is set, the same handler on a
// unix socket of mode 0600 for local callers (the same bearer token is required there).
type Server struct {
	Plane       *Plane
	Verifier    Verifier
	BindAddress string
	Socket      string
	Log         logr.Logger
}

// Start serves until ctx ends (a controller-runtime Runnable).
func (s *Server) Start(ctx context.Context) error {
	if s.Verifier == nil {
		return errors.New("k8s plane: no token verifier: the plane never runs open")
	}
	h := s.Plane.Handler(s.Verifier, s.Log)
	var listeners []net.Listener
	if s.BindAddress != "" {
		l, err := net.Listen("tcp", s.BindAddress)
		if err != nil {
			return fmt.Errorf("k8s plane: listen %s: %w", s.BindAddress, err)
		}
		listeners = append(listeners, l)
	}
	if s.Socket != "" {
		l, err := ListenSocket(s.Socket)
		if err != nil {
			for _, o := range listeners {
				_ = o.Close()
			}
			return err
		}
		listeners = append(listeners, l)
	}
	if len(listeners) == 0 {
		return errors.New("k8s plane: neither an address nor a socket to serve")
	}
	errc := make(chan error, len(listeners))
	var servers []*http.Server
	for _, l := range listeners {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
		servers = append(servers, srv)
		go func() { errc <- srv.Serve(l) }()
		s.Log.Info("serving the k8s plane", "address", l.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(sctx)
	}
	return nil
}

// ListenSocket listens on a unix socket at path with mode 0600 (owner only), replacing a
// stale socket there; the mode is set before the first connection can be accepted.
func ListenSocket(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("k8s plane: socket %s: a file that is not a socket is there", path)
		}
		_ = os.Remove(path)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("k8s plane: socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("k8s plane: socket %s: %w", path, err)
	}
	return l, nil
}
