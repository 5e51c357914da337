package lock

import (
	"context"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/clocktest"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

const (
	lease     = 20 * time.Second
	period    = 5 * time.Second
	validity  = lease - lease/10
	refresh   = time.Second
	maxPoll   = refresh + refresh/5
	patience  = 30 * time.Second
	ownerName = "me"
)

var epoch = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fixture is a Client on a fake clock over a MemoryStore wrapped in a
// FaultyStore.
type fixture struct {
	t     *testing.T
	fc    *clocktesting.FakeClock
	mem   *memorystore.Store
	store *faulty.Store
	c     *Client
	idle  chan string
	free  chan struct{}
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	f := &fixture{
		t:    t,
		fc:   clocktesting.NewFakeClock(epoch),
		mem:  memorystore.New(),
		idle: make(chan string),
		free: make(chan struct{}),
	}
	f.store = faulty.New(rows.MustOpen(f.mem))
	// Most tests here were written for stores whose failed conditions
	// carry no row, so that every failure is settled by a read; tests of
	// the one-request path call f.store.HideConflictRows(false).
	f.store.HideConflictRows(true)
	// The client's loops tell the clock when they block on it: the test
	// steps the clock only then.
	watched := &clocktest.Clock{FakeClock: f.fc, OnBlock: func(loop string) {
		select {
		case f.idle <- loop:
		case <-f.free:
		}
	}}
	all := append([]Option{WithClock(watched), WithOwnerName(ownerName), WithLeaseDuration(lease),
		WithHeartbeatPeriod(period), WithRefreshPeriod(refresh)}, opts...)
	c, err := NewFromStore(f.store, all...)
	if err != nil {
		t.Fatalf("NewFromStore: %v", err)
	}
	f.c = c
	t.Cleanup(func() {
		f.freeRun()
		_ = c.Close(context.Background())
	})
	return f
}

func (f *fixture) freeRun() {
	select {
	case <-f.free:
	default:
		close(f.free)
	}
}

// waitIdle waits until the named loop blocks on the clock.
func (f *fixture) waitIdle(loop string) {
	f.t.Helper()
	select {
	case got := <-f.idle:
		if got != loop {
			f.t.Fatalf("loop %q went idle, want %q", got, loop)
		}
	case <-time.After(patience):
		f.t.Fatalf("loop %q never went idle; calls %s", loop, summarize(f.ops()))
	}
}

func (f *fixture) ops() []faulty.Op {
	var ops []faulty.Op
	for _, c := range f.store.Calls() {
		ops = append(ops, c.Op)
	}
	return ops
}

func (f *fixture) wantOps(want ...faulty.Op) {
	f.t.Helper()
	got := f.ops()
	f.store.ResetCalls()
	if len(got) != len(want) {
		f.t.Fatalf("requests = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			f.t.Fatalf("requests = %v, want %v", got, want)
		}
	}
}

func (f *fixture) now() time.Time { return f.fc.Now() }

// acquire takes key at once (no contention) and waits for the heartbeat
// renewer to settle.
func (f *fixture) acquire(key string, opts ...AcquireOption) *Lock {
	f.t.Helper()
	l, err := f.c.Acquire(context.Background(), key, opts...)
	if err != nil {
		f.t.Fatalf("Acquire(%q): %v", key, err)
	}
	if f.c.k.Renews() {
		f.waitIdle("heartbeat")
	}
	return l
}

func (f *fixture) item(key string) rows.Item {
	f.t.Helper()
	it, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: key})
	if !ok {
		f.t.Fatalf("no row %q", key)
	}
	return it
}

// putForeign stores a row held by another owner.
func (f *fixture) putForeign(key, owner, rvn string, l time.Duration) {
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: key},
		Record: resourcelock.Record{HolderIdentity: owner, RVN: rvn, LeaseDuration: l}})
}

// gate returns a channel and a function that closes it.
func gate() (chan struct{}, func()) {
	ch := make(chan struct{})
	return ch, func() {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

func waitDone(t *testing.T, l *Lock) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(patience):
		t.Fatal("lock never ended")
	}
}

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

// summarize prints a list of calls, only its last 20 when it is long (a
// loop that spins makes millions).
func summarize(ops []faulty.Op) string {
	if len(ops) <= 20 {
		return fmt.Sprint(ops)
	}
	return fmt.Sprintf("%d calls, the last 20 %v", len(ops), ops[len(ops)-20:])
}
