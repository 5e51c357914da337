// Package health turns an Elector's checks into HTTP endpoints for
// Kubernetes probes, and into checkers of the shape of Kubernetes'
// healthz.HealthChecker (Name and Check) without importing Kubernetes.
//
// Which probe uses which check:
//
//   - Liveness (Liveness, served as /healthz or /livez): fails when a term of
//     this candidate ended more than a tolerance ago and the leader's work
//     has still not returned: the process acts as leader without being
//     one, or its election loop is stuck. Restarting it is the cure. It
//     never fails because this candidate is not the leader: a liveness
//     probe that failed on standbys would restart every standby.
//   - Readiness (Readiness, served as /readyz): fails when the candidate has
//     not been able to read or write its record for longer than a
//     tolerance (a missing table, no network, access denied): it cannot take
//     part in the election, and an operator should see it. Restarting does
//     not help, so this belongs in readiness, not liveness.
package health

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dynalease/dynalease/election"
)

// Checker has the method set of k8s.io/apiserver's healthz.HealthChecker,
// so a Checker can be registered there as it is.
type Checker interface {
	Name() string
	Check(req *http.Request) error
}

type checker struct {
	name  string
	check func() error
}

func (c checker) Name() string                { return c.name }
func (c checker) Check(_ *http.Request) error { return c.check() }

// Liveness is the elector's liveness check, named "leader-election": see
// election.Elector.Check. A tolerance of a few RetryPeriods leaves the
// leader's work time to return after its context is cancelled.
func Liveness(e *election.Elector, tolerance time.Duration) Checker {
	return checker{name: "leader-election", check: func() error { return e.Check(tolerance) }}
}

// Readiness is the elector's store check, named "leader-election-store":
// see election.Elector.CheckStore.
func Readiness(e *election.Elector, tolerance time.Duration) Checker {
	return checker{name: "leader-election-store", check: func() error { return e.CheckStore(tolerance) }}
}

// Handler serves the checks: 200 and "ok" when all pass, 503 with one line
// per failing check ("name: error") otherwise. It answers every method and
// path it is mounted on.
func Handler(checks ...Checker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var failed []string
		for _, c := range checks {
			if err := c.Check(r); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", c.Name(), err))
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if len(failed) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, strings.Join(failed, "\n"))
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
