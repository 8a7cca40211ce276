package gitops

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Readiness is a /readyz handler: 200 "ok" when every named check passes, else 503 Service
// Unavailable with one line per check. The lines name the checks, never their errors:
// the endpoint is unauthenticated. Add checks before serving; they run on every request.
type Readiness map[string]func(*http.Request) error

func (rd Readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	names := make([]string, 0, len(rd))
	for n := range rd {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	failed := false
	for _, n := range names {
		if err := rd[n](r); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s not ready\n", n)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", n)
		}
	}
	if !failed {
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "ok")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, b.String())
}

// errFirstSweep is the readiness of a leader whose first sweep has not reported yet.
var errFirstSweep = errors.New("the first git sweep has not completed")

// Ready is the sweep's readiness check: while leading() — the sweep runs on the leader
// only — it fails until the first sweep has completed or reported its error (GET /gitops
// then has a report). A standby is ready: it accepts webhooks and relays them.
func (s *Sweeper) Ready(leading func() bool) func(*http.Request) error {
	return func(*http.Request) error {
		if leading() && s.Last() == nil {
			return errFirstSweep
		}
		return nil
	}
}
