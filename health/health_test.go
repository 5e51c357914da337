package health_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/health"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/memorystore"
)

func get(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, rec.Body.String()
}

type fixed struct {
	name string
	err  error
}

func (f fixed) Name() string              { return f.name }
func (f fixed) Check(*http.Request) error { return f.err }

func TestHandlerNamesEveryFailingCheck(t *testing.T) {
	if code, body := get(t, health.Handler(fixed{"a", nil}, fixed{"b", nil})); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("all passing: %d %q", code, body)
	}
	code, body := get(t, health.Handler(fixed{"a", errors.New("down")}, fixed{"b", nil}, fixed{"c", errors.New("slow")}))
	if code != http.StatusServiceUnavailable || body != "a: down\nc: slow\n" {
		t.Fatalf("failing: %d %q", code, body)
	}
}

// A candidate whose record cannot be reached turns not ready, and stays
// live: restarting it would not help, and liveness never depends on
// leading.
func TestElectorThatCannotReachItsRecordIsLiveButNotReady(t *testing.T) {
	store := faulty.New(rows.MustOpen(memorystore.New()))
	reset := errors.New("connection reset")
	store.Inject(faulty.OpCreate, -1, faulty.Fault{Err: reset})
	store.Inject(faulty.OpGet, -1, faulty.Fault{Err: reset})
	e, err := election.New(election.Config{
		Store:         rows.Sealed(store),
		Name:          "leader",
		Identity:      "a",
		LeaseDuration: 2 * time.Second,
		RenewDeadline: 1500 * time.Millisecond,
		RetryPeriod:   10 * time.Millisecond, // the floor
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) { <-ctx.Done() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()

	live := health.Handler(health.Liveness(e, time.Second))
	ready := health.Handler(health.Readiness(e, 0))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, body := get(t, ready); code == http.StatusServiceUnavailable {
			if !strings.Contains(body, "leader-election-store: ") || !strings.Contains(body, "connection reset") {
				t.Fatalf("readiness body %q", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never turned not ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, body := get(t, live); code != http.StatusOK {
		t.Fatalf("liveness of a candidate that is not leading: %d %q", code, body)
	}
	var _ health.Checker = health.Liveness(e, 0) // the healthz.HealthChecker shape
}
