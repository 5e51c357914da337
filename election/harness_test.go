package election

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/clocktest"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

const (
	lockName = "leader"
	lease    = 15 * time.Second
	deadline = 10 * time.Second
	retry    = 2 * time.Second
	// maxPoll is the longest a candidate waits between polls.
	maxPoll = retry + retry/5
	// patience bounds, in real time, how long a test waits for the code
	// under test to reach a state; no test sleeps for a fixed time.
	patience = 30 * time.Second
)

var epoch = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// harness runs one Elector on a fake clock over a lease of a MemoryStore
// wrapped in rowstest.FaultyStore, and records its callbacks.
type harness struct {
	t     *testing.T
	fc    *clocktesting.FakeClock
	store *memorystore.Store
	lock  *faulty.Store // the store under the elector's lease
	e     *Elector

	idle    chan struct{} // one value each time the loop blocks on the clock
	free    chan struct{} // closed to let the loop run without the test
	events  chan string   // "started", "stopped", "work returned"
	leaders chan string   // OnNewLeader arguments
	ctxs    chan context.Context
	atStop  chan resourcelock.Record // the stored record when OnStoppedLeading ran
	// holdWork, when non-nil, keeps OnStartedLeading from returning until
	// closed, whatever its context does.
	holdWork chan struct{}

	cancel context.CancelFunc
	done   chan error // Run's result

}

type harnessOption func(*harness, *Config)

func withReleaseOnCancel() harnessOption {
	return func(_ *harness, c *Config) { c.ReleaseOnCancel = true }
}

func withStubbornWork() harnessOption {
	return func(h *harness, _ *Config) { h.holdWork = make(chan struct{}) }
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	return newHarnessOn(t, memorystore.New(), clocktesting.NewFakeClock(epoch), opts...)
}

func newHarnessOn(t *testing.T, store *memorystore.Store, fc *clocktesting.FakeClock, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		fc:      fc,
		store:   store,
		idle:    make(chan struct{}),
		free:    make(chan struct{}),
		events:  make(chan string, 100),
		leaders: make(chan string, 100),
		ctxs:    make(chan context.Context, 10),
		atStop:  make(chan resourcelock.Record, 10),
	}
	h.lock = faulty.New(rows.MustOpen(store))
	// Tests here are written for stores whose failed conditions carry no
	// row, so that every failure is settled by a read (the engine's own
	// tests cover the one-request path).
	h.lock.HideConflictRows(true)
	cfg := Config{
		Store:         rows.Sealed(h.lock),
		Name:          lockName,
		Identity:      "a",
		LeaseDuration: lease,
		RenewDeadline: deadline,
		RetryPeriod:   retry,
		// The loop tells the clock when it blocks on it: the test steps
		// the clock only then.
		// The term's renewals run on the engine's renewer, which tells
		// the loop of each one: the loop's blocking alone says the
		// elector is idle.
		Clock: &clocktest.Clock{FakeClock: fc, OnBlock: func(loop string) {
			if loop != "election" {
				return
			}
			select {
			case h.idle <- struct{}{}:
			case <-h.free:
			}
		}},
		Callbacks: Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				h.events <- "started"
				h.ctxs <- ctx
				<-ctx.Done()
				if h.holdWork != nil {
					<-h.holdWork
				}
				h.events <- "work returned"
			},
			OnStoppedLeading: func() {
				rec, _ := h.store.Record(lockName)
				h.atStop <- rec
				h.events <- "stopped"
			},
			OnNewLeader: func(id string) { h.leaders <- id },
		},
	}
	for _, o := range opts {
		o(h, &cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.e = e
	t.Cleanup(h.stop)
	return h
}

// start runs the elector in the background.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.e.Run(ctx) }()
}

func (h *harness) stop() {
	h.freeRun()
	if h.cancel != nil {
		h.cancel()
	}
	if h.holdWork != nil {
		select {
		case <-h.holdWork:
		default:
			close(h.holdWork)
		}
	}
}

// freeRun lets the loop run without waiting for the test.
func (h *harness) freeRun() {
	select {
	case <-h.free:
	default:
		close(h.free)
	}
}

// waitIdle waits until the loop blocks on the clock.
func (h *harness) waitIdle() {
	h.t.Helper()
	select {
	case <-h.idle:
	case <-time.After(patience):
		h.t.Fatalf("the election loop never came to wait on the clock; calls so far %s", summarize(h.ops()))
	}
}

// step advances the fake clock; the loop must be idle.
func (h *harness) step(d time.Duration) { h.fc.Step(d) }

// stepIdle advances the clock and waits for the loop to be idle again.
func (h *harness) stepIdle(d time.Duration) {
	h.t.Helper()
	h.step(d)
	h.waitIdle()
}

func (h *harness) now() time.Time { return h.fc.Now() }

// ops returns the operations sent so far, in order.
func (h *harness) ops() []faulty.Op {
	var ops []faulty.Op
	for _, c := range h.lock.Calls() {
		ops = append(ops, c.Op)
	}
	return ops
}

// wantOps checks the operations sent since the last check.
func (h *harness) wantOps(want ...faulty.Op) {
	h.t.Helper()
	got := h.ops()
	h.lock.ResetCalls()
	if len(got) != len(want) {
		h.t.Fatalf("requests = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			h.t.Fatalf("requests = %v, want %v", got, want)
		}
	}
}

// wantReads checks that the operations sent since the last check are
// reads, one or more, then the operations of last: a standby's rhythm
// (see rvnlease's rhythm) reads again soon after it saw a renewal, until
// the next renewal or its rhythm is lost.
func (h *harness) wantReads(last ...faulty.Op) {
	h.t.Helper()
	got := h.ops()
	h.lock.ResetCalls()
	n := len(got) - len(last)
	if n < 1 || !slices.Equal(got[n:], last) || slices.ContainsFunc(got[:n], func(op faulty.Op) bool { return op != faulty.OpGet }) {
		h.t.Fatalf("requests = %v, want one or more Get, then %v", got, last)
	}
}

// wantEvent waits for the next callback event and checks it.
func (h *harness) wantEvent(want string) {
	h.t.Helper()
	select {
	case got := <-h.events:
		if got != want {
			h.t.Fatalf("event %q, want %q", got, want)
		}
	case <-time.After(patience):
		h.t.Fatalf("no event %q", want)
	}
}

// wantEvents waits for the next len(want) events, in any order.
func (h *harness) wantEvents(want ...string) {
	h.t.Helper()
	left := map[string]int{}
	for _, w := range want {
		left[w]++
	}
	for range want {
		select {
		case got := <-h.events:
			if left[got] == 0 {
				h.t.Fatalf("event %q, want one of %v", got, want)
			}
			left[got]--
		case <-time.After(patience):
			h.t.Fatalf("missing events among %v", want)
		}
	}
}

// noEvent checks that no callback event is pending.
func (h *harness) noEvent() {
	h.t.Helper()
	select {
	case got := <-h.events:
		h.t.Fatalf("unexpected event %q", got)
	default:
	}
}

// wantLeaders waits for the next OnNewLeader reports.
func (h *harness) wantLeaders(want ...string) {
	h.t.Helper()
	for _, w := range want {
		select {
		case got := <-h.leaders:
			if got != w {
				h.t.Fatalf("OnNewLeader(%q), want OnNewLeader(%q)", got, w)
			}
		case <-time.After(patience):
			h.t.Fatalf("no OnNewLeader(%q)", w)
		}
	}
}

// noLeaderReport checks that OnNewLeader has nothing pending. Reports are
// asynchronous; callers check after the loop went idle, by which time a
// report would have been queued.
func (h *harness) noLeaderReport() {
	h.t.Helper()
	time.Sleep(10 * time.Millisecond) // let the notifier goroutine deliver
	select {
	case got := <-h.leaders:
		h.t.Fatalf("unexpected OnNewLeader(%q)", got)
	default:
	}
}

// result waits for Run to return.
func (h *harness) result() error {
	h.t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(patience):
		h.t.Fatal("Run did not return")
		return nil
	}
}

// leaderCtx returns the context given to OnStartedLeading.
func (h *harness) leaderCtx() context.Context {
	h.t.Helper()
	select {
	case ctx := <-h.ctxs:
		return ctx
	case <-time.After(patience):
		h.t.Fatal("OnStartedLeading got no context")
		return nil
	}
}

// record returns the stored record.
func (h *harness) record() resourcelock.Record {
	h.t.Helper()
	rec, ok := h.store.Record(lockName)
	if !ok {
		h.t.Fatal("no record stored")
	}
	return rec
}

// putForeign stores a record of another holder, as its own renewal would.
func (h *harness) putForeign(holder, rvn string) {
	h.store.Put(lockName, resourcelock.Record{HolderIdentity: holder, RVN: rvn, LeaseDuration: lease})
}

// holdNext injects fault, whose Block holds the call on its way, for the
// next call of op, and returns a channel that receives every operation
// called from now on (room for 64: the test reads those it waits for, up
// to the held one; see waitCall).
func (h *harness) holdNext(op faulty.Op, fault faulty.Fault) <-chan faulty.Op {
	entered := make(chan faulty.Op, 64)
	h.lock.OnCall(func(o faulty.Op) { entered <- o })
	h.lock.Inject(op, 1, fault)
	return entered
}

// waitCall reads entered until op is called.
func (h *harness) waitCall(entered <-chan faulty.Op, op faulty.Op) {
	h.t.Helper()
	for {
		select {
		case got := <-entered:
			if got == op {
				return
			}
		case <-time.After(patience):
			h.t.Fatalf("%s never called", op)
		}
	}
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var errReset = errors.New("connection reset by peer")

// gate returns a channel and a function closing it once.
func gate() (chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

var errCanceled = context.Canceled

// summarize prints a list of calls, only its last 20 when it is long (a
// loop that spins makes millions).
func summarize(ops []faulty.Op) string {
	if len(ops) <= 20 {
		return fmt.Sprint(ops)
	}
	return fmt.Sprintf("%d calls, the last 20 %v", len(ops), ops[len(ops)-20:])
}

// mustLease returns the lease called name of store, written as identity.
func mustLease(store rows.Store, name, identity string) resourcelock.Interface {
	l, err := keylease.New(store, resourcelock.Key{Partition: name}, identity)
	if err != nil {
		panic(err)
	}
	return keylease.AsInterface(l)
}
