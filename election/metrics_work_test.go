package election

import (
	"sync"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/metrics"
)

// workRecorder is a metrics.Election that keeps what Leading and Working
// last said.
type workRecorder struct {
	metrics.Nop
	mu               sync.Mutex
	leading, working bool
	workingCalls     int
}

var _ metrics.ElectionWork = (*workRecorder)(nil)

func (r *workRecorder) Leading(leading bool, _ time.Time) {
	r.mu.Lock()
	r.leading = leading
	r.mu.Unlock()
}

func (r *workRecorder) Working(running bool) {
	r.mu.Lock()
	r.working = running
	r.workingCalls++
	r.mu.Unlock()
}

func (r *workRecorder) state() (leading, working bool, calls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leading, r.working, r.workingCalls
}

func withMetrics(m metrics.Election) harnessOption {
	return func(_ *harness, c *Config) { c.Metrics = m }
}

// A recorder implementing metrics.ElectionWork sees the leader's work run
// from before OnStartedLeading until it returns: past the term's end when
// the work outlives it, the state the liveness alert looks for.
func TestMetricsSeeTheLeadersWorkOutliveItsTerm(t *testing.T) {
	rec := &workRecorder{}
	h := newHarness(t, withStubbornWork(), withMetrics(rec))
	h.leading()
	if leading, working, _ := rec.state(); !leading || !working {
		t.Fatalf("while leading: leading %v, working %v; want both", leading, working)
	}
	h.lock.Inject(faulty.OpUpdate, -1, faulty.Fault{Err: errReset})
	h.lock.Inject(faulty.OpGet, -1, faulty.Fault{Err: errReset})
	h.freeRun()
	h.step(deadline)       // the renewals fail; the term's validity passes
	h.wantEvent("stopped") // from the term's timer; the loop reports the end next
	eventually(t, "the term's end reported", func() bool { leading, _, _ := rec.state(); return !leading })
	if _, working, _ := rec.state(); !working {
		t.Fatal("after the term, with the work held, the work is not reported running")
	}
	close(h.holdWork)
	h.wantEvent("work returned")
	h.result()
	if _, working, calls := rec.state(); working || calls != 2 {
		t.Fatalf("after the work returned: working %v after %d reports; want false after 2", working, calls)
	}
}
