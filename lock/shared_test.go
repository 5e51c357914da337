package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// otherClient returns a second client on f's store and clock, without
// heartbeats, named owner.
func (f *fixture) otherClient(owner string) *Client {
	f.t.Helper()
	c, err := NewFromStore(f.store, WithClock(f.fc), WithOwnerName(owner), WithLeaseDuration(lease),
		WithHeartbeatPeriod(0), WithRefreshPeriod(refresh))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// putReader stores a row of k held by one reader of identity, with lease,
// as another client's AcquireShared leaves it, and returns the entry.
func (f *fixture) putReader(identity string, l time.Duration) rows.Reader {
	f.t.Helper()
	r := rows.Reader{Ticket: uuid.NewString(), Identity: identity, Lease: l, RVN: uuid.NewString()}
	if _, err := rows.MustOpen(f.mem).Share(context.Background(), keyK, rows.Share{Op: rows.ShareBegin, Reader: r, RVN: r.RVN}); err != nil {
		f.t.Fatalf("Share: %v", err)
	}
	return r
}

// renewReader renews r's entry in the row of k, as its holder's heartbeat
// would.
func (f *fixture) renewReader(r rows.Reader) rows.Reader {
	f.t.Helper()
	next := r
	next.RVN = uuid.NewString()
	if _, err := rows.MustOpen(f.mem).Share(context.Background(), keyK, rows.Share{Op: rows.ShareRenew, Reader: next, Expect: r.RVN, RVN: next.RVN}); err != nil {
		f.t.Fatalf("renewing %s: %v", r.Identity, err)
	}
	return next
}

func mustShared(t *testing.T, c *Client, key string) *Lock {
	t.Helper()
	l, err := c.TryAcquireShared(context.Background(), key)
	if err != nil {
		t.Fatalf("TryAcquireShared(%q) by %s: %v", key, c.cfg.identity, err)
	}
	return l
}

func mustRelease(t *testing.T, l *Lock) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// Shared holds of one key, of one client and of another, hold it at once,
// each as an entry of the row, and keep any writer out; the last release
// frees the row.
func TestSharedHoldsOfOneKeyHoldItAtOnce(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	other := f.otherClient("other")
	a, b := mustShared(t, f.c, "k"), mustShared(t, f.c, "k")
	c := mustShared(t, other, "k")
	it := f.item("k")
	if !it.HeldByReaders() || len(it.Readers) != 3 {
		t.Fatalf("row after three shared holds: %+v readers %+v; want held by three readers", it.Record, it.Readers)
	}
	for _, l := range []*Lock{a, b, c} {
		if !l.IsHeld() || !l.Shared() || l.Key() != "k" {
			t.Fatalf("shared lock: held %v, shared %v, key %q", l.IsHeld(), l.Shared(), l.Key())
		}
	}
	if _, err := other.TryAcquire(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("an exclusive TryAcquire while readers hold: %v, want ErrLocked", err)
	}
	if info, err := other.Get(context.Background(), "k"); err != nil || len(info.Readers) != 3 || info.HolderIdentity != rows.ReadersHolder {
		t.Fatalf("Get while three read: %+v, %v; want the readers' three identities", info, err)
	}
	if err := a.Heartbeat(context.Background()); err != nil {
		t.Fatalf("a shared lock's Heartbeat: %v", err)
	}
	mustRelease(t, a)
	mustRelease(t, c)
	if it := f.item("k"); !it.HeldByReaders() || len(it.Readers) != 1 {
		t.Fatalf("row after two of three released: %+v readers %+v; want held by one reader", it.Record, it.Readers)
	}
	mustRelease(t, b)
	if it := f.item("k"); !it.Free() || it.Readers != nil {
		t.Fatalf("row after every reader released: %+v readers %+v; want free", it.Record, it.Readers)
	}
	w, err := other.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatalf("an exclusive TryAcquire after the readers: %v", err)
	}
	if _, err := f.c.TryAcquireShared(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("a shared TryAcquire while a writer holds: %v, want ErrLocked", err)
	}
	mustRelease(t, w)
}

// A writer that waits for readers holds back new readers (they wait, and
// TryAcquireShared refuses) while the readers that hold finish; it takes
// the row at its first read after the last of them released: within one
// poll (its refresh period with jitter) of that release.
func TestAWaitingWriterHoldsBackNewReadersAndWaitsOnlyForTheHolders(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	readers := f.otherClient("readers")
	r1 := mustShared(t, readers, "k")
	f.store.ResetCalls()
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpJoin)
	wantQueue(t, f.item("k"), ownerName)
	if _, err := readers.TryAcquireShared(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("a new reader while a writer waits: %v, want ErrLocked", err)
	}
	const hold = 3 * time.Second // r1's hold
	var released time.Time
	for {
		if released.IsZero() && !f.now().Before(epoch.Add(hold)) {
			mustRelease(t, r1)
			released = f.now()
		}
		f.fc.Step(maxPoll)
		select {
		case l := <-locks:
			if released.IsZero() {
				t.Fatal("the writer took the row while a reader held it")
			}
			if waited := f.now().Sub(released); waited > maxPoll {
				t.Fatalf("the writer took the row %v after the last reader's release, want within a poll (%v)", waited, maxPoll)
			}
			if it := f.item("k"); it.HolderIdentity != ownerName || it.Readers != nil || len(it.Queue) != 0 {
				t.Fatalf("row after the writer took it: %+v readers %+v queue %+v", it.Record, it.Readers, it.Queue)
			}
			if _, err := readers.TryAcquireShared(context.Background(), "k"); !errors.Is(err, ErrLocked) {
				t.Fatalf("a reader while the writer holds: %v, want ErrLocked", err)
			}
			mustRelease(t, l)
			mustRelease(t, mustShared(t, readers, "k"))
			return
		case err := <-errs:
			t.Fatalf("Acquire: %v", err)
		case <-f.idle:
			if !released.IsZero() && f.now().Sub(released) > 2*maxPoll {
				t.Fatal("the writer never took the row the readers released")
			}
			if released.IsZero() {
				if _, err := readers.TryAcquireShared(context.Background(), "k"); !errors.Is(err, ErrLocked) {
					t.Fatalf("a new reader while a writer waits: %v, want ErrLocked", err)
				}
			}
		case <-time.After(patience):
			t.Fatal("Acquire neither waited nor returned")
		}
	}
}

// A reader that went silent is waited out by a writer for the reader's
// lease, on the writer's clock from the read that first showed the row's
// RVN, and never sooner; a reader that renews is never taken from.
func TestAWriterWaitsOutASilentReaderAndNeverALiveOne(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	const readerLease = 6 * time.Second
	live := f.putReader("live", readerLease)
	_, errs := f.acquireAsync("k", WithAdditionalWait(2*time.Second))
	f.waitIdle("acquire")
	for i := 0; ; i++ {
		live = f.renewReader(live)
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			if i > 100 {
				t.Fatal("never gave up")
			}
			continue
		case err := <-errs:
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("Acquire while a reader renews = %v, want ErrLocked", err)
			}
			if it := f.item("k"); !it.HeldByReaders() || record.ReaderPlace(it, live.Ticket) < 0 {
				t.Fatalf("the live reader's row: %+v readers %+v", it.Record, it.Readers)
			}
		case <-time.After(patience):
			t.Fatal("Acquire neither waited nor returned")
		}
		break
	}

	g := newFixture(t, WithHeartbeatPeriod(0))
	g.putReader("dead", readerLease)
	locks, errs := g.acquireAsync("k")
	g.waitIdle("acquire")
	start := g.now()
	for {
		g.fc.Step(maxPoll)
		select {
		case <-g.idle:
			if g.now().Sub(start) > readerLease+2*maxPoll {
				t.Fatal("the silent reader was never taken over")
			}
			continue
		case l := <-locks:
			waited := g.now().Sub(start)
			if waited < readerLease || waited > readerLease+maxPoll {
				t.Fatalf("took the silent reader's row after %v, want within [%v, %v]", waited, readerLease, readerLease+maxPoll)
			}
			if it := g.item("k"); it.HolderIdentity != ownerName || it.Readers != nil {
				t.Fatalf("row after the takeover: %+v readers %+v", it.Record, it.Readers)
			}
			mustRelease(t, l)
		case err := <-errs:
			t.Fatalf("Acquire: %v", err)
		case <-time.After(patience):
			t.Fatal("Acquire neither waited nor returned")
		}
		return
	}
}

// A reader waits out a silent writer for its lease and takes the row over;
// one taken from by a writer's takeover (it had stopped renewing) is lost,
// with the writer named.
func TestAReaderTakesOverASilentWriterAndIsLostToATakeover(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	const writerLease = 6 * time.Second
	f.putForeign("k", "dead-writer", "w0", writerLease)
	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		l, err := f.c.AcquireShared(context.Background(), "k")
		if err != nil {
			errs <- err
			return
		}
		locks <- l
	}()
	f.waitIdle("acquire")
	f.wantOps(faulty.OpShare, faulty.OpGet, faulty.OpJoin) // the begin refused; the reader queues
	start := f.now()
	var l *Lock
	for l == nil {
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			if f.now().Sub(start) > writerLease+2*maxPoll {
				t.Fatal("the silent writer was never taken over")
			}
		case l = <-locks:
			if waited := f.now().Sub(start); waited < writerLease {
				t.Fatalf("took the silent writer's row after %v, before its lease %v", waited, writerLease)
			}
		case err := <-errs:
			t.Fatalf("AcquireShared: %v", err)
		case <-time.After(patience):
			t.Fatal("AcquireShared neither waited nor returned")
		}
	}
	it := f.item("k")
	if !it.HeldByReaders() || len(it.Readers) != 1 || it.Readers[0].Identity != ownerName {
		t.Fatalf("row after the reader's takeover: %+v readers %+v", it.Record, it.Readers)
	}
	// A writer takes the row at its RVN (as after the reader's lease).
	if _, err := rows.MustOpen(f.mem).Update(context.Background(), keyK, resourcelock.Precondition{RVN: it.RVN},
		resourcelock.Record{HolderIdentity: "thief", RVN: "t1", LeaseDuration: lease}, rows.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := l.Heartbeat(context.Background())
	var lost *dynalease.LostError
	if !errors.As(err, &lost) || lost.Reason != dynalease.Stolen || lost.HolderIdentity != "thief" {
		t.Fatalf("heartbeat of a reader whose row a writer took: %v, want stolen by thief", err)
	}
	waitDone(t, l)
}

// The options a shared lock cannot honour are refused before any request,
// naming the option; so are a guarded write, data and deletion.
func TestSharedLocksRefuseWhatTheyCannotDo(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	for name, opt := range map[string]AcquireOption{
		"WithData": WithData([]byte("x")), "WithReplaceData": WithReplaceData(false), "WithDeleteOnRelease": WithDeleteOnRelease(),
		"WithAcquireOnlyIfExists": WithAcquireOnlyIfExists(), "WithReentrant": WithReentrant(),
		"WithAttributes": WithAttributes(map[string]any{"a": "b"}),
	} {
		_, err := f.c.TryAcquireShared(context.Background(), "k", opt)
		var inv *dynalease.InvalidError
		if !errors.As(err, &inv) || inv.Field != name {
			t.Errorf("TryAcquireShared with %s: %v, want ErrInvalid naming it", name, err)
		}
	}
	_, err := f.c.AcquireShared(context.Background(), "")
	var inv *dynalease.InvalidError
	if !errors.As(err, &inv) || inv.Field != "key" {
		t.Errorf("AcquireShared of an empty key: %v, want ErrInvalid naming key", err)
	}
	f.wantOps()
	l := mustShared(t, f.c, "k")
	f.store.ResetCalls()
	for what, err := range map[string]error{
		"Guard":           l.Guard(context.Background(), func(context.Context, resourcelock.Holding) error { return nil }),
		"SetData":         l.SetData(context.Background(), []byte("x")),
		"ReleaseWithData": l.Release(context.Background(), ReleaseWithData([]byte("x"))),
		"ReleaseDelete":   l.Release(context.Background(), ReleaseDelete(true)),
	} {
		if !errors.As(err, &inv) || inv.Field != what {
			t.Errorf("%s on a shared lock: %v, want ErrInvalid naming it", what, err)
		}
	}
	f.wantOps()
	if !l.IsHeld() {
		t.Fatal("a refused call ended the shared lock")
	}
	mustRelease(t, l)
	_ = dynamodbstore.Config{}
}

// A shared wait that gives up (its context ends) leaves no entry behind,
// even when its join landed and the answer was lost.
func TestACancelledSharedWaitLeavesNoEntry(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	other := f.otherClient("other")
	r := mustShared(t, other, "k")
	f.store.Inject(faulty.OpShare, 1, faulty.Fault{}) // its begin, refused
	f.store.Inject(faulty.OpShare, 1, faulty.Fault{Land: true, Err: errors.New("connection reset")})
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{}) // the read of the refused begin's row
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{Err: errors.New("connection reset")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.c.AcquireShared(ctx, "k")
		done <- err
	}()
	f.waitIdle("acquire")
	if it := f.item("k"); len(it.Readers) != 2 {
		t.Fatalf("readers after a join whose answer was lost: %+v, want it landed; calls %v", it.Readers, f.store.Calls())
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("AcquireShared after cancel: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("AcquireShared did not return after cancel")
	}
	if it := f.item("k"); len(it.Readers) != 1 || it.Readers[0].Identity != "other" {
		t.Fatalf("readers after the cancelled wait: %+v, want other's alone", it.Readers)
	}
	mustRelease(t, r)
}

// waitRecorder records Waiting and HandedOver (metrics.LockWaits).
type waitRecorder struct {
	metrics.Nop
	mu       sync.Mutex
	waiting  map[string]int
	most     map[string]int
	handOffs map[string]int
}

func (r *waitRecorder) Waiting(kind string, delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting[kind] += delta
	r.most[kind] = max(r.most[kind], r.waiting[kind])
}

func (r *waitRecorder) HandedOver(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handOffs[kind]++
}

// A client whose recorder reports waits counts each acquisition under way
// by kind while it runs, and the releases that hand a lock over.
func TestWaitsAndHandOversAreReported(t *testing.T) {
	rec := &waitRecorder{waiting: map[string]int{}, most: map[string]int{}, handOffs: map[string]int{}}
	f := newFixture(t, WithHeartbeatPeriod(0), WithMetrics(rec), WithStint(-1)) // no stint: a release with a waiter hands over
	readers := f.otherClient("readers")
	r := mustShared(t, readers, "k")
	locks, _ := f.acquireAsync("k")
	f.waitIdle("acquire")
	rec.mu.Lock()
	if rec.waiting["lock"] != 1 {
		t.Errorf("a writer waiting for readers: waiting{lock} = %d, want 1", rec.waiting["lock"])
	}
	rec.mu.Unlock()
	mustRelease(t, r)
	f.fc.Step(maxPoll)
	var w *Lock
	select {
	case w = <-locks:
	case <-f.idle:
		t.Fatal("the writer did not take the released row at its next read")
	case <-time.After(patience):
		t.Fatal("Acquire did not return")
	}
	f.join("next", lease)
	mustRelease(t, w)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.waiting["lock"] != 0 || rec.most["lock"] != 1 || rec.handOffs["lock"] != 1 {
		t.Errorf("after the writer's acquisition and hand-over: waiting %v (most %v), hand-overs %v; want 0 (1) and 1", rec.waiting, rec.most, rec.handOffs)
	}
}

// An upgradeable reader becomes the writer without releasing: its upgrade
// holds new readers back, waits for the other reader, and takes the key
// within a poll of that reader's release, ahead of a writer queued before
// it; the shared lock then ends as released, and the writer's token is
// above every earlier one.
func TestAnUpgradeableReaderBecomesTheWriterWithoutReleasing(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	others := f.otherClient("others")
	up, err := f.c.TryAcquireShared(context.Background(), "k", WithUpgradeable())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := others.TryAcquireShared(context.Background(), "k", WithUpgradeable()); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second upgradeable reader: %v, want ErrLocked", err)
	}
	other := mustShared(t, others, "k")
	f.join("queued-writer", lease) // a writer queued before the upgrade
	before := f.item("k").Acquisitions
	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		w, err := up.Upgrade(context.Background())
		if err != nil {
			errs <- err
			return
		}
		locks <- w
	}()
	f.waitIdle("acquire")
	if _, err := others.TryAcquireShared(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("a new reader while the upgrade waits: %v, want ErrLocked", err)
	}
	if !up.IsHeld() {
		t.Fatal("the upgrading reader stopped holding while it waits")
	}
	mustRelease(t, other)
	released := f.now()
	f.fc.Step(maxPoll)
	select {
	case w := <-locks:
		if waited := f.now().Sub(released); waited > maxPoll {
			t.Fatalf("upgraded %v after the other reader's release, want within a poll", waited)
		}
		it := f.item("k")
		if it.HolderIdentity != ownerName || it.Readers != nil || it.Acquisitions <= before || !w.IsHeld() || w.Shared() {
			t.Fatalf("after the upgrade: row %+v readers %+v; writer held %v", it.Record, it.Readers, w.IsHeld())
		}
		if !errors.Is(up.Err(), ErrNotHeld) {
			t.Fatalf("the upgraded shared lock: %v, want ErrNotHeld", up.Err())
		}
		wantQueue(t, it, "queued-writer")
		mustRelease(t, w)
	case err := <-errs:
		t.Fatalf("Upgrade: %v", err)
	case <-f.idle:
		t.Fatal("the upgrade did not take the key at its next read")
	case <-time.After(patience):
		t.Fatal("Upgrade did not return")
	}
}

// Upgrade refuses a lock that is not an upgradeable shared hold, and one
// that gives up leaves the shared hold held; WithUpgradeable is refused by
// every other acquisition.
func TestUpgradeRefusalsAndGivingUp(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	others := f.otherClient("others")
	var inv *dynalease.InvalidError
	plain := mustShared(t, f.c, "p")
	if _, err := plain.Upgrade(context.Background()); !errors.As(err, &inv) || inv.Field != "Upgrade" {
		t.Errorf("Upgrade of a plain shared lock: %v, want ErrInvalid naming Upgrade", err)
	}
	excl, err := f.c.TryAcquire(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := excl.Upgrade(context.Background()); !errors.As(err, &inv) || inv.Field != "Upgrade" {
		t.Errorf("Upgrade of an exclusive lock: %v, want ErrInvalid naming Upgrade", err)
	}
	for what, err := range map[string]error{
		"TryAcquire": func() error { _, err := f.c.TryAcquire(context.Background(), "y", WithUpgradeable()); return err }(),
		"TryAcquireSet": func() error {
			_, err := f.c.TryAcquireSet(context.Background(), []string{"y"}, WithUpgradeable())
			return err
		}(),
		"TryAcquirePermit": func() error {
			_, err := f.c.TryAcquirePermit(context.Background(), "y", 2, WithUpgradeable())
			return err
		}(),
		"Get": func() error { _, err := f.c.Get(context.Background(), "y", WithUpgradeable()); return err }(),
	} {
		if !errors.As(err, &inv) || inv.Field != "WithUpgradeable" {
			t.Errorf("%s with WithUpgradeable: %v, want ErrInvalid naming it", what, err)
		}
	}
	up, err := f.c.TryAcquireShared(context.Background(), "k", WithUpgradeable())
	if err != nil {
		t.Fatal(err)
	}
	other := mustShared(t, others, "k")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := up.Upgrade(ctx)
		done <- err
	}()
	f.waitIdle("acquire")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled Upgrade: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("Upgrade did not return after cancel")
	}
	if !up.IsHeld() || up.Heartbeat(context.Background()) != nil {
		t.Fatal("a cancelled upgrade ended the shared hold")
	}
	if it := f.item("k"); len(it.Queue) != 0 || len(it.Readers) != 2 {
		t.Fatalf("after a cancelled upgrade: queue %+v readers %+v; want no queue, both readers", it.Queue, it.Readers)
	}
	mustRelease(t, other)
	mustRelease(t, up)
}

// With a TTL, a reader sets the row's from the row's lease, never its own
// shorter one, so that the row outlives every reader's hold by the slack;
// a renewal that finds the row's lease raised since (a longer reader
// joined) is refused, and the next one sets the TTL from the new lease.
func TestASharedHoldSetsTheRowsTTLFromTheLongestLease(t *testing.T) {
	const slack = time.Hour
	f := newFixture(t, WithHeartbeatPeriod(0), WithTTL(slack))
	const long, longer = 3 * time.Hour, 5 * time.Hour
	f.putReader("long", long)
	l := mustShared(t, f.c, "k")
	wantTTL := func(what string, rowLease time.Duration) {
		t.Helper()
		it := f.item("k")
		if least := time.Now().Add(rowLease + slack); it.Expires.Before(least.Add(-time.Minute)) { // TTLs are wall-clock times
			t.Fatalf("%s: TTL %v, want at least %v (the row's lease %v plus the slack)", what, it.Expires, least, rowLease)
		}
	}
	wantTTL("after the join", long)
	if err := l.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantTTL("after a heartbeat", long)
	// A longer reader joins: the row's lease is now 5 h.
	r := rows.Reader{Ticket: uuid.NewString(), Identity: "longer", Lease: longer, RVN: uuid.NewString()}
	if _, err := rows.MustOpen(f.mem).Share(context.Background(), keyK, rows.Share{Op: rows.ShareJoin, Reader: r, RVN: r.RVN, SeenLease: long}); err != nil {
		t.Fatal(err)
	}
	if err := l.Heartbeat(context.Background()); err == nil || errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("a heartbeat expecting the old row lease: %v, want it not confirmed, and not a loss", err)
	}
	if err := l.Heartbeat(context.Background()); err != nil {
		t.Fatalf("the heartbeat after: %v", err)
	}
	wantTTL("after the longer reader joined", longer)
	mustRelease(t, l)
	wantTTL("after the release", longer)
}

// An upgrade never takes a row that no longer holds its reader's entry:
// after a writer took the row over (the reader silent past its lease) and
// released it, Upgrade finds the row free, and reports the shared hold
// lost instead of taking the key, leaving the row free for others.
func TestAnUpgradeNeverTakesARowWithoutItsEntry(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	up, err := f.c.TryAcquireShared(context.Background(), "k", WithUpgradeable())
	if err != nil {
		t.Fatal(err)
	}
	it := f.item("k")
	taken, err := rows.MustOpen(f.mem).Update(context.Background(), keyK, resourcelock.Precondition{RVN: it.RVN},
		resourcelock.Record{HolderIdentity: "thief", RVN: "t1", LeaseDuration: lease}, rows.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rows.MustOpen(f.mem).Update(context.Background(), keyK, resourcelock.Precondition{RVN: taken.RVN, HolderIdentity: "thief"},
		resourcelock.Record{HolderIdentity: "thief", RVN: "t2", LeaseDuration: lease, Released: true}, rows.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := up.Upgrade(context.Background())
	if err == nil || !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Upgrade of a reader whose entry is gone: %v, %v; want a loss", w, err)
	}
	if it := f.item("k"); !it.Free() {
		t.Fatalf("row after the refused upgrade: %+v; want it free", it.Record)
	}
}
