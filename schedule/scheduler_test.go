package schedule

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/clocktest"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/metrics"
	rlt "github.com/dynalease/dynalease/resourcelock/resourcelocktest"
)

// oneInstance runs jobs on one scheduler over a memory store, on a fake
// clock that moves to the next whole minute (plus a second) each time the
// schedule's loop waits, and stops after the run function has been called
// for the wanted slots. It returns the events seen.
func oneInstance(t *testing.T, m metrics.Jobs, until func([]Event) bool, jobs ...Job) []Event {
	t.Helper()
	mem := rlt.NewMemoryStore()
	fc := clocktesting.NewFakeClock(t0.Add(-30 * time.Second))
	var (
		mu     sync.Mutex
		events []Event
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := &clocktest.Clock{FakeClock: fc, OnBlock: func(loop string) {
		mu.Lock()
		done := until(events)
		mu.Unlock()
		if done {
			cancel()
			return
		}
		switch loop {
		case "schedule":
			now := fc.Now()
			next := now.Truncate(time.Minute).Add(time.Minute + time.Second)
			go fc.SetTime(next)
		case "acquire":
			go fc.Step(2 * time.Second)
		}
	}}
	c, err := lock.New(lock.Config{Store: mem, Identity: "solo", Clock: clk, LeaseDuration: testLease,
		HeartbeatPeriod: 5 * time.Second, RefreshPeriod: testRefresh})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	s, err := New(Config{Locks: c, Clock: clk, Metrics: m, OnEvent: func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}}, jobs...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the scheduler never reached the slots wanted")
	}
	mu.Lock()
	defer mu.Unlock()
	return events
}

func count(events []Event, kind EventKind) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func TestASchedulerRunsEachSlotInTurn(t *testing.T) {
	var slots []time.Time
	job := Job{Name: "j", Schedule: minutely(t), Run: func(ctx context.Context, r Run) error {
		slots = append(slots, r.Slot)
		if r.Attempt != 1 || r.Token == 0 || r.Lock == nil {
			t.Errorf("run %+v", r)
		}
		if r.Slot.Equal(t0.Add(time.Minute)) {
			return errors.New("the second slot fails")
		}
		return nil
	}}
	m := &jobCounts{n: map[string]int{}}
	events := oneInstance(t, m, func(ev []Event) bool { return count(ev, EventFinished) >= 3 }, job)
	want := []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute)}
	if len(slots) < 3 {
		t.Fatalf("slots run %v, want %v", slots, want)
	}
	for i, s := range want {
		if !slots[i].Equal(s) {
			t.Fatalf("slots run %v, want %v first", slots, want)
		}
	}
	var outcomes []Outcome
	for _, e := range events {
		if e.Kind == EventFinished {
			outcomes = append(outcomes, e.Outcome)
		}
		if e.Kind == EventStarted && (e.Lateness < 0 || e.Lateness > 2*time.Second) {
			t.Errorf("a run started %v after its slot", e.Lateness)
		}
	}
	if outcomes[0] != Succeeded || outcomes[1] != Failed || outcomes[2] != Succeeded {
		t.Fatalf("outcomes %v", outcomes)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n[metrics.SlotStarted] < 3 || m.n[metrics.SlotSucceeded] < 2 || m.n[metrics.SlotFailed] != 1 || m.successes < 2 || m.interval != time.Minute {
		t.Fatalf("metrics %+v", m)
	}
}

// jobCounts is a metrics.Jobs that counts.
type jobCounts struct {
	metrics.Nop
	mu        sync.Mutex
	n         map[string]int
	successes int
	interval  time.Duration
}

func (c *jobCounts) Slots(_, event string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[event] += n
}

func (c *jobCounts) Succeeded(_ string, _ time.Time, interval time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.successes++
	c.interval = interval
}
