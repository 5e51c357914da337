package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/clocktest"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// oneInstance runs jobs on one scheduler over a memory store, on a fake
// clock that moves to the next whole minute (plus a second) each time the
// schedule's loop waits, and stops after the run function has been called
// for the wanted slots. It returns the events seen.
func oneInstance(t *testing.T, m metrics.Jobs, until func([]Event) bool, jobs ...Job) []Event {
	t.Helper()
	return oneInstanceFrom(t, t0.Add(-30*time.Second), nil, m, until, jobs...)
}

// soloClock is the fake clock of the oneInstance test under way, for run
// functions that let time pass; soloLease its lease (testLease when zero).
// They are safe only while this package's tests do not run in parallel
// (none calls t.Parallel).
var (
	soloClock *clocktesting.FakeClock
	soloLease time.Duration
	// soloStore, when set, wraps the memory store the lock client uses.
	soloStore func(*memorystore.Store) rows.Store
)

// oneInstanceFrom is oneInstance with the clock starting at start and the
// store's rows set by setup first.
func oneInstanceFrom(t *testing.T, start time.Time, setup func(*memorystore.Store), m metrics.Jobs, until func([]Event) bool, jobs ...Job) []Event {
	t.Helper()
	mem := memorystore.New()
	if setup != nil {
		setup(mem)
	}
	fc := clocktesting.NewFakeClock(start)
	soloClock = fc
	lease := testLease
	if soloLease > 0 {
		lease = soloLease
	}
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
	var store rows.Store = rows.MustOpen(mem)
	if soloStore != nil {
		store = soloStore(mem)
	}
	c, err := lock.New(lock.Config{Store: rows.Sealed(store), Identity: "solo", Clock: clk, LeaseDuration: lease,
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
	// The due time follows the third run's success at the loop's next read
	// of the ledger: the run stops once it has, not at the third finish.
	due := t0.Add(4*time.Minute + testLease + testRefresh)
	events := oneInstance(t, m, func(ev []Event) bool { return count(ev, EventFinished) >= 3 && m.dueAt(due) }, job)
	want := []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute)}
	if len(slots) < 3 {
		t.Fatalf("slots run %v, want %v", slots, want)
	}
	for i, s := range want {
		if !slots[i].Equal(s) {
			t.Fatalf("slots run %v, want %v first", slots, want)
		}
	}
	var outcomes []Status
	for _, e := range events {
		if e.Kind == EventFinished {
			outcomes = append(outcomes, e.Status)
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
	if m.n[metrics.SlotStarted] < 3 || m.n[metrics.SlotSucceeded] < 2 || m.n[metrics.SlotFailed] != 1 || m.successes < 2 || !m.due.Equal(due) {
		t.Fatalf("metrics %+v", m)
	}
}

// dueAt reports whether the last due time reported is at.
func (c *jobCounts) dueAt(at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.due.Equal(at)
}

// jobCounts is a metrics.Jobs that counts.
type jobCounts struct {
	metrics.Nop
	mu        sync.Mutex
	n         map[string]int
	successes int
	due       time.Time
}

func (c *jobCounts) Slots(_, event string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[event] += n
}

func (c *jobCounts) Succeeded(string, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.successes++
}

func (c *jobCounts) Due(_ string, by time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.due = by
}

func eventsOf(events []Event, kind EventKind) []Event {
	var out []Event
	for _, e := range events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// A run that died mid-slot (its holder gone, the row still held) is tried
// again as attempt 2 of the same slot once its lease has run out, within
// the slot's deadline.
func TestARunThatDiedIsTriedAgain(t *testing.T) {
	dead := func(mem *memorystore.Store) {
		rows.MustRaw(mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: jobKey},
			Record:  resourcelock.Record{HolderIdentity: "dead", RVN: "r1", LeaseDuration: testLease},
			Numbers: map[string]int64{runAttribute: run(t0, 1)}})
	}
	job := Job{Name: "j", Schedule: minutely(t), StartingDeadline: time.Minute, Retries: 1,
		Run: func(ctx context.Context, r Run) error { return nil }}
	events := oneInstanceFrom(t, t0.Add(time.Second), dead, nil, func(ev []Event) bool { return count(ev, EventFinished) >= 1 }, job)
	started := eventsOf(events, EventStarted)
	if len(started) == 0 || !started[0].Slot.Equal(t0) || started[0].Attempt != 2 {
		t.Fatalf("started %+v, want slot %v attempt 2 first", started, t0)
	}
	if started[0].Lateness < testLease {
		t.Fatalf("the retry started %v after its slot, before the dead run's lease %v ran out", started[0].Lateness, testLease)
	}
	if f := eventsOf(events, EventFinished); f[0].Status != Succeeded {
		t.Fatalf("finished %+v", f)
	}
}

// Slots missed while every instance was down: the latest runs once, late,
// the others are counted missed, and the next slot runs on time.
func TestSlotsMissedWhileAllWereDown(t *testing.T) {
	finishedAt := func(mem *memorystore.Store) {
		rows.MustRaw(mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: jobKey},
			Record:  resourcelock.Record{HolderIdentity: "gone", RVN: "r1", LeaseDuration: testLease, Released: true},
			Numbers: map[string]int64{runAttribute: run(t0, 1), doneAttribute: t0.UnixMilli(), outcomeAttribute: int64(Succeeded)}})
	}
	var slots []time.Time
	job := Job{Name: "j", Schedule: minutely(t), Run: func(ctx context.Context, r Run) error {
		slots = append(slots, r.Slot)
		return nil
	}}
	back := t0.Add(5*time.Minute + 30*time.Second) // past the 5th slot's deadline
	events := oneInstanceFrom(t, back, finishedAt, nil, func(ev []Event) bool { return count(ev, EventFinished) >= 2 }, job)
	if len(slots) < 2 || !slots[0].Equal(t0.Add(5*time.Minute)) || !slots[1].Equal(t0.Add(6*time.Minute)) {
		t.Fatalf("slots run %v, want the 5th (late) then the 6th", slots)
	}
	missed := eventsOf(events, EventMissed)
	if len(missed) != 1 || missed[0].Count != 4 {
		t.Fatalf("missed %+v, want one event of 4 slots", missed)
	}
	if late := eventsOf(events, EventStarted)[0].Lateness; late < 30*time.Second {
		t.Fatalf("the latest missed slot started %v late, want about 30 s", late)
	}
}

// An error that waiting cannot fix (here a table gone) ends Run with it
// rather than being retried forever.
func TestAnUnfixableErrorEndsRun(t *testing.T) {
	store := faulty.New(rows.MustOpen(memorystore.New()))
	gone := fmt.Errorf("%w: table gone", resourcelock.ErrPermanent)
	store.Inject(faulty.OpGet, 1, faulty.Fault{Err: gone})
	c, err := lock.New(lock.Config{Store: rows.Sealed(store), Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	s, err := New(Config{Locks: c}, Job{Name: "j", Schedule: minutely(t), Run: func(context.Context, Run) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Run(ctx); !errors.Is(err, resourcelock.ErrPermanent) || ctx.Err() != nil {
		t.Fatalf("Run = %v (ctx %v), want the permanent error", err, ctx.Err())
	}
}

// A run that lasts three and a half minutes of a minutely job: the slots
// due meanwhile wait (OverlapWait) and, their deadlines passed, are
// missed; the instance that ran does not start the latest of them late
// as if every instance had been down (the missed-slot policy), and the
// next slot runs on time.
func TestSlotsDueDuringALongRunFollowTheOverlapPolicy(t *testing.T) {
	for _, overlap := range []OverlapPolicy{OverlapWait, OverlapSkip} {
		t.Run(fmt.Sprint(overlap), func(t *testing.T) {
			soloLease = 10 * time.Minute
			defer func() { soloLease = 0 }()
			var slots []time.Time
			job := Job{Name: "j", Schedule: minutely(t), StartingDeadline: 20 * time.Second, Overlap: overlap,
				Run: func(ctx context.Context, r Run) error {
					slots = append(slots, r.Slot)
					if len(slots) == 1 {
						soloClock.Step(3*time.Minute + 30*time.Second)
					}
					return nil
				}}
			events := oneInstance(t, nil, func(ev []Event) bool { return count(ev, EventFinished) >= 2 }, job)
			if len(slots) != 2 || !slots[0].Equal(t0) || !slots[1].Equal(t0.Add(4*time.Minute)) {
				t.Fatalf("slots run %v, want %v and %v", slots, t0, t0.Add(4*time.Minute))
			}
			kind := map[OverlapPolicy]EventKind{OverlapWait: EventMissed, OverlapSkip: EventSkipped}[overlap]
			settled := eventsOf(events, kind)
			if len(settled) != 1 || settled[0].Count != 3 || !settled[0].Slot.Equal(t0.Add(3*time.Minute)) {
				t.Fatalf("events of kind %v: %+v, want one of 3 slots up to %v", kind, settled, t0.Add(3*time.Minute))
			}
		})
	}
}

// staleLedger is a store that counts its reads and, when stale, shows no
// ledger in them, as a read sent just before another instance started the
// slot would.
type staleLedger struct {
	rows.Store
	gets  *atomic.Int32
	stale bool
}

func (s staleLedger) Get(ctx context.Context, k resourcelock.Key) (rows.Item, error) {
	s.gets.Add(1)
	it, err := s.Store.Get(ctx, k)
	if s.stale {
		it.Numbers = nil
	}
	return it, err
}

// A step refused by the ledger's bound (the slot started or finished
// elsewhere since this instance read the ledger) plans from the ledger its
// refusal carried, without reading the row again: one read per slot here,
// not two.
func TestARefusalByTheLedgerIsNotFollowedByARead(t *testing.T) {
	var gets atomic.Int32
	soloStore = func(mem *memorystore.Store) rows.Store {
		return staleLedger{Store: rows.MustOpen(mem), gets: &gets, stale: true}
	}
	t.Cleanup(func() { soloStore = nil }) // safe: no test here runs in parallel
	finishedElsewhere := func(mem *memorystore.Store) {
		rows.MustRaw(mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: jobKey},
			Record:  resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: testLease, Released: true},
			Numbers: map[string]int64{runAttribute: run(t0, 1), doneAttribute: t0.UnixMilli(), outcomeAttribute: int64(Succeeded)}})
	}
	var ran atomic.Bool
	job := Job{Name: "j", Schedule: minutely(t), Run: func(context.Context, Run) error { ran.Store(true); return nil }}
	events := oneInstanceFrom(t, t0.Add(-30*time.Second), finishedElsewhere, nil, func([]Event) bool {
		return !soloClock.Now().Before(t0) // the loop is back asleep after slot t0
	}, job)
	if ran.Load() || count(events, EventStarted) != 0 {
		t.Fatalf("slot t0, finished elsewhere, ran here: events %+v", events)
	}
	// One read before t0, one at it; none after the refusal.
	if n := gets.Load(); n != 2 {
		t.Fatalf("%d reads of the ledger, want 2", n)
	}
}

// After its own run, confirmed released with the slot finished, the loop
// plans from the ledger that release wrote: no read of the row until the
// next slot's.
func TestAReleasedRunIsNotFollowedByARead(t *testing.T) {
	var gets atomic.Int32
	soloStore = func(mem *memorystore.Store) rows.Store { return staleLedger{Store: rows.MustOpen(mem), gets: &gets} }
	t.Cleanup(func() { soloStore = nil }) // safe: no test here runs in parallel
	job := Job{Name: "j", Schedule: minutely(t), Run: func(context.Context, Run) error { return nil }}
	events := oneInstanceFrom(t, t0.Add(-30*time.Second), nil, nil, func([]Event) bool {
		return !soloClock.Now().Before(t0) // the loop is back asleep after slot t0
	}, job)
	if fin := eventsOf(events, EventFinished); len(fin) != 1 || !fin[0].Slot.Equal(t0) || fin[0].Status != Succeeded {
		t.Fatalf("events %+v, want slot t0 run here and succeeded", events)
	}
	// One read before t0, one at it; none after the release.
	if n := gets.Load(); n != 2 {
		t.Fatalf("%d reads of the ledger, want 2", n)
	}
}

// timedCalls records, on the solo clock, when each Get and Create of the
// store is made.
type timedCalls struct {
	rows.Store
	mu    sync.Mutex
	calls []string
}

func (s *timedCalls) note(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf("%s@%v", op, soloClock.Now().Sub(t0)))
}

func (s *timedCalls) Get(ctx context.Context, k resourcelock.Key) (rows.Item, error) {
	s.note("get")
	it, err := s.Store.Get(ctx, k)
	it.Numbers = nil // a ledger read before the slot started
	return it, err
}

func (s *timedCalls) Create(ctx context.Context, k resourcelock.Key, rec resourcelock.Record, o rows.WriteOptions) (rows.Item, error) {
	s.note("create")
	return s.Store.Create(ctx, k, rec, o)
}

// A step refused because the slot's run holds the row (started elsewhere)
// is followed by the wait for that run only after a pause: the refusal
// just saw the row, so the wait does not read it again at once.
func TestARefusalByARunningSlotIsNotFollowedByARead(t *testing.T) {
	calls := &timedCalls{}
	soloStore = func(mem *memorystore.Store) rows.Store { calls.Store = rows.MustOpen(mem); return calls }
	t.Cleanup(func() { soloStore = nil }) // safe: no test here runs in parallel
	startedElsewhere := func(mem *memorystore.Store) {
		rows.MustRaw(mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: jobKey},
			Record:  resourcelock.Record{HolderIdentity: "other", RVN: "r1", LeaseDuration: time.Hour},
			Numbers: map[string]int64{runAttribute: run(t0, 1)}})
	}
	job := Job{Name: "j", Schedule: minutely(t), Retries: 1, StartingDeadline: 30 * time.Second,
		Run: func(context.Context, Run) error { return nil }}
	oneInstanceFrom(t, t0.Add(-30*time.Second), startedElsewhere, nil, func([]Event) bool {
		return soloClock.Now().After(t0.Add(time.Second)) // the harness starts slot t0 at t0 + 1 s
	}, job)
	calls.mu.Lock()
	defer calls.mu.Unlock()
	at0 := slices.Index(calls.calls, "create@1s")
	if at0 < 0 {
		t.Fatalf("calls %v: no refused start at t0", calls.calls)
	}
	if after := calls.calls[at0+1:]; len(after) == 0 || slices.Contains(after, "get@1s") {
		t.Fatalf("calls %v: the row was read again at once after the refusal", calls.calls)
	}
}

// The next slot after a run here, confirmed released, is planned from the
// ledger that release wrote, kept over the sleep: its start needs no read
// (its write meets any start elsewhere). One read before t0, one at it,
// none after.
func TestTheSlotAfterARunHereIsStartedWithoutARead(t *testing.T) {
	var gets atomic.Int32
	soloStore = func(mem *memorystore.Store) rows.Store { return staleLedger{Store: rows.MustOpen(mem), gets: &gets} }
	t.Cleanup(func() { soloStore = nil }) // safe: no test here runs in parallel
	job := Job{Name: "j", Schedule: minutely(t), Run: func(context.Context, Run) error { return nil }}
	events := oneInstanceFrom(t, t0.Add(-30*time.Second), nil, nil, func(ev []Event) bool {
		return count(ev, EventFinished) >= 2
	}, job)
	if fin := eventsOf(events, EventFinished); len(fin) != 2 || !fin[1].Slot.Equal(t0.Add(time.Minute)) {
		t.Fatalf("events %+v, want slots t0 and t0+1m run here", events)
	}
	if n := gets.Load(); n != 2 {
		t.Fatalf("%d reads of the ledger, want 2", n)
	}
}
