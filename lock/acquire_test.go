package lock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// acquireAsync runs Acquire in the background.
func (f *fixture) acquireAsync(key string, opts ...AcquireOption) (chan *Lock, chan error) {
	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		l, err := f.c.Acquire(context.Background(), key, opts...)
		if err != nil {
			errs <- err
			return
		}
		locks <- l
	}()
	return locks, errs
}

func TestAcquireTakesAStaleLockAfterTheHoldersLease(t *testing.T) {
	f := newFixture(t)
	const holderLease = 6 * time.Second // the holder's, not ours
	f.putForeign("k", "java-host", "r1", holderLease)
	locks, errs := f.acquireAsync("k")
	f.waitIdle("acquire")
	f.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpJoin)
	for {
		f.fc.Step(maxPoll)
		if f.now().Before(epoch.Add(holderLease)) {
			f.waitIdle("acquire")
			f.wantOps(faulty.OpGet)
			continue
		}
		break
	}
	select {
	case l := <-locks:
		f.waitIdle("heartbeat")
		f.wantOps(faulty.OpUpdate)
		if f.item("k").HolderIdentity != ownerName || !l.IsHeld() {
			t.Fatal("not taken over")
		}
	case err := <-errs:
		t.Fatalf("Acquire: %v", err)
	case <-time.After(patience):
		t.Fatal("Acquire did not return")
	}
}

// stallingClock is a fake clock on which every reading takes stall: the
// machine stalls between any two steps of the code, as a loaded one may.
type stallingClock struct {
	*clocktesting.FakeClock
	stall time.Duration
}

func (c *stallingClock) Now() time.Time {
	c.FakeClock.Step(c.stall)
	return c.FakeClock.Now()
}

func (c *stallingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// A holder's lease that runs out while this client is busy between its read
// and its decision (here a 1 ms lease, as the AWS Java client may write,
// and a clock that moves 1 ms at every reading) is taken over: the budget
// ends only when the lock was still held after the lease, and an RVN
// watched unchanged for the whole lease is not "still held".
func TestAcquireTakesALeaseThatRanOutWhileThisClientStalled(t *testing.T) {
	f := newFixture(t)
	f.freeRun()
	clk := &stallingClock{FakeClock: f.fc, stall: time.Millisecond}
	c, err := NewFromStore(f.store, WithClock(clk), WithOwnerName("slow"), WithLeaseDuration(lease),
		WithHeartbeatPeriod(0), WithRefreshPeriod(refresh))
	if err != nil {
		t.Fatal(err)
	}
	f.putForeign("k", "java-host", "r1", time.Millisecond)
	l, err := c.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatalf("Acquire of a row whose 1 ms lease ran out = %v, want the lock", err)
	}
	if got := f.item("k").HolderIdentity; got != "slow" || !l.IsHeld() {
		t.Fatalf("row held by %q after the takeover", got)
	}
	f.wantOps(faulty.OpCreate, faulty.OpGet, faulty.OpJoin, faulty.OpUpdate)
}

func TestAcquireGivesUpWhenTheHolderKeepsRenewing(t *testing.T) {
	f := newFixture(t)
	const holderLease = 4 * time.Second
	f.putForeign("k", "other", "r0", holderLease)
	_, errs := f.acquireAsync("k", WithAdditionalWait(2*time.Second))
	f.waitIdle("acquire")
	for i := 1; ; i++ {
		f.putForeign("k", "other", fmt.Sprint("r", i), holderLease) // the holder renews
		if i > 100 {
			t.Fatal("never gave up")
		}
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			continue
		case err := <-errs:
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("Acquire = %v, want ErrLocked", err)
			}
			if waited := f.now().Sub(epoch); waited < holderLease+2*time.Second {
				t.Fatalf("gave up after %v, before the holder's lease + the additional wait", waited)
			}
			if f.item("k").HolderIdentity != "other" {
				t.Fatal("took a renewed lock")
			}
			return
		case <-time.After(patience):
			t.Fatal("Acquire neither waited nor returned")
		}
	}
}

func TestTryAcquireNeverWaitsButTakesAWatchedStaleLock(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r1", lease)
	if _, err := f.c.TryAcquire(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryAcquire of a held lock = %v, want ErrLocked", err)
	}
	f.wantOps(faulty.OpCreate, faulty.OpGet)
	f.fc.Step(lease - time.Millisecond)
	if _, err := f.c.TryAcquire(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryAcquire before the lease passed = %v", err)
	}
	f.wantOps(faulty.OpGet)
	f.fc.Step(time.Millisecond)
	l, err := f.c.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatalf("TryAcquire of a lock watched unchanged for its lease: %v", err)
	}
	f.waitIdle("heartbeat")
	f.wantOps(faulty.OpUpdate)
	if !l.IsHeld() {
		t.Fatal("not held")
	}
}

func TestTryAcquireRestartsTheWatchWhenTheRVNChanges(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r1", lease)
	_, _ = f.c.TryAcquire(context.Background(), "k")
	f.fc.Step(lease / 2)
	f.putForeign("k", "other", "r2", lease)
	_, _ = f.c.TryAcquire(context.Background(), "k")
	f.fc.Step(lease / 2)
	if _, err := f.c.TryAcquire(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("took a lock renewed half a lease ago: %v", err)
	}
}

func TestObservationCacheIsBounded(t *testing.T) {
	f := newFixture(t, WithObservationCacheSize(2))
	for _, k := range []string{"a", "b", "c"} {
		f.putForeign(k, "other", "r-"+k, lease)
		_, _ = f.c.TryAcquire(context.Background(), k)
	}
	if n := f.c.k.Watches().Len(); n != 2 {
		t.Fatalf("cache holds %d keys, want 2", n)
	}
	if _, _, ok := f.c.k.Watches().Get(resourcelock.Key{Partition: "a"}); ok {
		t.Fatal("the oldest key was not evicted")
	}
	f.fc.Step(lease)
	// "a" was forgotten: its wait starts again.
	if _, err := f.c.TryAcquire(context.Background(), "a"); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryAcquire of a forgotten key = %v", err)
	}
	if _, err := f.c.TryAcquire(context.Background(), "c"); err != nil {
		t.Fatalf("TryAcquire of a remembered stale key: %v", err)
	}
}

func TestTryAcquireOfAHeldLockFailsAtOnce(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r1", lease)
	if _, err := f.c.TryAcquire(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryAcquire = %v", err)
	}
	f.wantOps(faulty.OpCreate, faulty.OpGet)
}

func TestAcquireReleasedAndMissingRowsAtOnce(t *testing.T) {
	f := newFixture(t)
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "k"},
		Record: resourcelock.Record{HolderIdentity: "other", RVN: "r", LeaseDuration: time.Hour, Released: true, Data: []byte("old")}})
	l := f.acquire("k", WithReplaceData(false))
	f.wantOps(faulty.OpCreate)
	if string(l.Data()) != "old" {
		t.Fatalf("WithReplaceData(false) lost the row's data: %q", l.Data())
	}
	l2 := f.acquire("fresh", WithData([]byte("new")))
	if string(l2.Data()) != "new" {
		t.Fatal("data not written")
	}
}

func TestAcquireOnlyIfExists(t *testing.T) {
	f := newFixture(t)
	if _, err := f.c.Acquire(context.Background(), "missing", WithAcquireOnlyIfExists()); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Acquire of a missing row = %v, want ErrNotFound", err)
	}
	if _, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: "missing"}); ok {
		t.Fatal("the row was created")
	}
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "k"},
		Record: resourcelock.Record{HolderIdentity: "other", RVN: "r", LeaseDuration: lease, Released: true}})
	f.acquire("k", WithAcquireOnlyIfExists())
}

func TestAttributesAreStoredAndReservedNamesRefused(t *testing.T) {
	f := newFixture(t)
	attrs := map[string]any{"region": &types.AttributeValueMemberS{Value: "eu"}}
	l := f.acquire("k", WithAttributes(attrs))
	if v, ok := f.item("k").Attributes["region"].(*types.AttributeValueMemberS); !ok || v.Value != "eu" {
		t.Fatalf("row attributes %v", f.item("k").Attributes)
	}
	if _, ok := l.Attributes()["region"]; !ok {
		t.Fatal("Lock.Attributes lacks the attribute")
	}
	f.store.ResetCalls()
	// An empty name is refused here; the names a store keeps are the
	// store's to refuse (dynamodb_test.go).
	_, err := f.c.Acquire(context.Background(), "x", WithAttributes(map[string]any{"": &types.AttributeValueMemberS{Value: "v"}}))
	if !errors.Is(err, dynalease.ErrInvalid) {
		t.Errorf("an empty attribute name: %v, want dynalease.ErrInvalid", err)
	}
	f.wantOps()
}

func TestBadInputIsRefusedBeforeAnyRequest(t *testing.T) {
	f := newFixture(t)
	held := f.acquire("held")
	f.store.ResetCalls()
	long := make([]byte, record.MaxNameBytes+1)
	for i := range long {
		long[i] = 'k'
	}
	cases := map[string]func() error{
		"empty key": func() error { _, err := f.c.Acquire(context.Background(), ""); return err },
		"long key":  func() error { _, err := f.c.Acquire(context.Background(), string(long)); return err },
		"big data": func() error {
			_, err := f.c.Acquire(context.Background(), "k", WithData(make([]byte, record.MaxDataBytes+1)))
			return err
		},
		"big data by SetData": func() error {
			return held.SetData(context.Background(), make([]byte, record.MaxDataBytes+1))
		},
		"big data by ReleaseWithData": func() error {
			return held.Release(context.Background(), ReleaseWithData(make([]byte, record.MaxDataBytes+1)))
		},
		"monitor below heartbeat": func() error {
			_, err := f.c.Acquire(context.Background(), "k", WithSessionMonitor(period, func() {}))
			return err
		},
		"monitor beyond validity": func() error {
			_, err := f.c.Acquire(context.Background(), "k", WithSessionMonitor(validity, func() {}))
			return err
		},
		"monitor without callback": func() error {
			_, err := f.c.Acquire(context.Background(), "k", WithSessionMonitor(10*time.Second, nil))
			return err
		},
		"negative additional wait": func() error {
			_, err := f.c.Acquire(context.Background(), "k", WithAdditionalWait(-time.Second))
			return err
		},
		"long sort key": func() error {
			_, err := f.c.Acquire(context.Background(), "k", WithSortKeyValue(string(long[:record.MaxSortKeyBytes+1])))
			return err
		},
	}
	for name, call := range cases {
		if err := call(); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("%s: %v, want dynalease.ErrInvalid", name, err)
		}
	}
	// Key limits are resourcelock's, checked there and translated once.
	for _, name := range []string{"empty key", "long key", "long sort key"} {
		if err := cases[name](); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("%s: %v, want it to match dynalease.ErrInvalid too", name, err)
		}
	}
	f.wantOps()
}

func TestClientConfigValidation(t *testing.T) {
	store := memorystore.New()
	const s = time.Second
	for name, tc := range map[string]struct {
		cfg   Config
		field string
	}{
		"heartbeat not below lease": {Config{LeaseDuration: 10 * s, HeartbeatPeriod: 10 * s}, "HeartbeatPeriod"},
		"heartbeat above half":      {Config{LeaseDuration: 10 * s, HeartbeatPeriod: 4 * s, RequestTimeout: s}, "HeartbeatPeriod"},
		"negative heartbeat":        {Config{HeartbeatPeriod: -s}, "HeartbeatPeriod"},
		"negative lease":            {Config{LeaseDuration: -1}, "LeaseDuration"},
		"margin at lease":           {Config{SafetyMargin: DefaultLeaseDuration}, "SafetyMargin"},
		"ttl slack under an hour":   {Config{TTL: time.Minute}, "TTL"},
		"negative refresh":          {Config{RefreshPeriod: -s}, "RefreshPeriod"},
		"identity over 1 KiB":       {Config{Identity: string(make([]byte, 2000))}, "Identity"},
		"request timeout too long":  {Config{RequestTimeout: time.Minute}, "RequestTimeout"},
		// Bug 9 of the engine issue: a margin with no room for drift.
		"margin of 1 ns":           {Config{SafetyMargin: time.Nanosecond}, "SafetyMargin"},
		"margin below 1% of lease": {Config{LeaseDuration: 10 * s, SafetyMargin: 99 * time.Millisecond}, "SafetyMargin"},
		// Bug 11: floors for a network store.
		"refresh of 1 ns":           {Config{RefreshPeriod: time.Nanosecond}, "RefreshPeriod"},
		"heartbeat below the floor": {Config{HeartbeatPeriod: 10*time.Millisecond - 1}, "HeartbeatPeriod"},
		"request timeout of 1 ns":   {Config{RequestTimeout: time.Nanosecond}, "RequestTimeout"},
		// Review issue, bug 5: sums that overflowed passed; each field the
		// sum rule refuses is named, the one that alone breaks it first.
		"request timeout of for ever": {Config{RequestTimeout: math.MaxInt64}, "RequestTimeout"},
		"heartbeat of for ever":       {Config{HeartbeatPeriod: math.MaxInt64}, "HeartbeatPeriod"},
		"both near for ever":          {Config{HeartbeatPeriod: math.MaxInt64 / 2, RequestTimeout: math.MaxInt64/2 + 1}, "RequestTimeout"},
		// A Config names its store.
		"no store":            {Config{}, "Store"},
		"manual and periodic": {Config{ManualHeartbeats: true, HeartbeatPeriod: s}, "HeartbeatPeriod"},
	} {
		cfg := tc.cfg
		if name != "no store" {
			cfg.Store = store
		}
		_, err := New(cfg)
		var oe *dynalease.InvalidError
		if !errors.Is(err, dynalease.ErrInvalid) || !errors.As(err, &oe) || oe.Field != tc.field {
			t.Errorf("%s: %v, want an InvalidError naming %s", name, err, tc.field)
		}
	}
	// Fencing over a store that keeps no fences is refused, naming
	// Fencing. (The table's own fields are the DynamoDB store's to check:
	// dynamodbstore's tests.)
	noFences, err := dynamodbstore.New(dynamodbstore.Config{Client: &dynamodb.Client{}, Table: "locks"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Store: noFences, Fencing: true}); !errors.As(err, new(*dynalease.InvalidError)) || !strings.Contains(err.Error(), "Fencing") {
		t.Errorf("Fencing on a store without fences: %v, want an InvalidError naming Fencing", err)
	}
	if _, err := New(Config{Store: store, LeaseDuration: 10 * s, HeartbeatPeriod: s, SafetyMargin: 10 * s / 100}); err != nil {
		t.Errorf("the smallest margin allowed is refused: %v", err)
	}
	c, err := New(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.lease != 20*s || c.cfg.heartbeat != 5*s || c.cfg.margin != 2*s || c.cfg.refresh != s || c.cfg.stint != s || c.Identity() == "" {
		t.Fatalf("defaults %+v", c.cfg)
	}
	if other, _ := New(Config{Store: store}); other.Identity() == c.Identity() {
		t.Fatal("two clients got the same default owner name")
	}
	if f, _ := New(Config{Store: store, RefreshPeriod: s / 10}); f.cfg.stint != s/10 {
		t.Fatalf("default stint %v with a refresh period of %v, want one period", f.cfg.stint, s/10)
	}
	if u, _ := New(Config{Store: store, Unfair: true}); u.cfg.stint != 0 {
		t.Fatalf("an unfair client's stint %v, want none", u.cfg.stint)
	}
	m, err := New(Config{Store: store, ManualHeartbeats: true})
	if err != nil || m.cfg.heartbeat != 0 {
		t.Fatalf("ManualHeartbeats: heartbeat %v, %v; want none", m.cfg.heartbeat, err)
	}
}

func TestAmbiguousAcquisitionThatLandedIsAdopted(t *testing.T) {
	f := newFixture(t)
	f.store.Inject(faulty.OpCreate, 1, faulty.Fault{Land: true, Err: errReset})
	l := f.acquire("k")
	f.wantOps(faulty.OpCreate, faulty.OpGet)
	if !l.IsHeld() || !l.ValidUntil().Equal(epoch.Add(validity)) {
		t.Fatal("a landed acquisition was not adopted with its send time")
	}
}

func TestARowNamingThisOwnerFromAnEarlierProcessIsWaitedOut(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", ownerName, "rvn-of-a-crashed-process", lease)
	if _, err := f.c.TryAcquire(context.Background(), "k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryAcquire over our own name's row = %v, want ErrLocked", err)
	}
}

// Review issue, bug 6: a refresh period near the largest duration waits
// (for ever, here) instead of wrapping to a negative wait and polling in a
// tight loop while the clock stands still.
func TestHugeRefreshPeriodWaitsInsteadOfSpinning(t *testing.T) {
	f := newFixture(t)
	f.putForeign("k", "other", "r0", lease)
	f.acquireAsync("k", WithRefreshPeriodFor(math.MaxInt64))
	f.waitIdle("acquire")
	if n := len(f.ops()); n != 3 {
		t.Fatalf("Acquire sent %d requests before waiting, want 3 (a create, the read settling it, a join of the queue): %s", n, summarize(f.ops()))
	}
	f.freeRun()
}

// Bug 8 of the engine issue: WithAdditionalWait(math.MaxInt64) overflowed
// and Acquire gave up at once. It now waits as long as the holder renews.
func TestAdditionalWaitSaturates(t *testing.T) {
	f := newFixture(t)
	const holderLease = 4 * time.Second
	f.putForeign("k", "other", "r0", holderLease)
	_, errs := f.acquireAsync("k", WithAdditionalWait(math.MaxInt64))
	f.waitIdle("acquire")
	for i := 1; i < 20; i++ {
		f.putForeign("k", "other", fmt.Sprint("r", i), holderLease) // the holder renews
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
		case err := <-errs:
			t.Fatalf("Acquire gave up after %v: %v", f.now().Sub(epoch), err)
		case <-time.After(patience):
			t.Fatal("Acquire neither waited nor returned")
		}
	}
	f.freeRun()
}

// Bug 12 of the engine issue: an Acquire cancelled after its acquiring
// write was sent and its answer lost leaves no orphan row: the write
// landed, and the row is released again before Acquire returns. When that
// release fails too, a later Acquire by the same client recognises the
// row as its own instead of waiting a full lease.
func TestCancelledAcquireLeavesNoOrphanRow(t *testing.T) {
	for _, releaseFails := range []bool{false, true} {
		t.Run(fmt.Sprint("release fails: ", releaseFails), func(t *testing.T) {
			f := newFixture(t, WithHeartbeatPeriod(0))
			f.freeRun()
			block, entered := make(chan struct{}), make(chan faulty.Op, 10)
			f.store.OnCall(func(op faulty.Op) { entered <- op })
			f.store.Inject(faulty.OpCreate, 1, faulty.Fault{Block: block, Land: true}) // lands when cancelled
			if releaseFails {
				f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errors.New("connection reset")})
			}
			ctx, cancel := context.WithCancel(context.Background())
			errs := make(chan error, 1)
			go func() {
				_, err := f.c.Acquire(ctx, "k")
				errs <- err
			}()
			<-entered // the Create is under way
			cancel()
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Fatalf("Acquire = %v, want context.Canceled", err)
			}
			f.store.OnCall(nil)
			row := f.item("k")
			if row.HolderIdentity != ownerName {
				t.Fatalf("row %+v: the cancelled create did not land", row.Record)
			}
			if row.Released == releaseFails {
				t.Fatalf("row released = %v after the cancelled Acquire (release failing: %v)", row.Released, releaseFails)
			}
			// The same client gets the lock back at once, without waiting
			// a lease for its own row.
			l, err := f.c.TryAcquire(context.Background(), "k")
			if err != nil || !l.IsHeld() {
				t.Fatalf("TryAcquire after the cancelled Acquire = %v", err)
			}
		})
	}
}

// Bug 6, second half: an Acquire that saw the lock held, then free, and
// then meets nothing but failures gives up after its budget with the last
// cause, instead of retrying for ever (found in review).
func TestAcquireGivesUpWhenTheTableStopsAnsweringAfterARelease(t *testing.T) {
	f := newFixture(t)
	const holderLease = 4 * time.Second
	f.putForeign("k", "other", "r0", holderLease)
	_, errs := f.acquireAsync("k", WithAdditionalWait(2*time.Second))
	f.waitIdle("acquire")
	rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "k"},
		Record: resourcelock.Record{HolderIdentity: "other", RVN: "r0", LeaseDuration: holderLease, Released: true}})
	boom := errors.New("connection refused")
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{}) // the read that sees the release
	f.store.Inject(faulty.OpCreate, -1, faulty.Fault{Err: boom})
	f.store.Inject(faulty.OpGet, -1, faulty.Fault{Err: boom})
	for i := 0; i < 200; i++ {
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
		case err := <-errs:
			if !errors.Is(err, boom) || errors.Is(err, ErrLocked) {
				t.Fatalf("Acquire = %v, want the last cause", err)
			}
			if waited := f.now().Sub(epoch); waited < holderLease+2*time.Second {
				t.Fatalf("gave up after %v, before its budget", waited)
			}
			return
		case <-time.After(patience):
			t.Fatal("Acquire neither waited nor returned")
		}
	}
	t.Fatalf("still retrying after %v (budget %v)", f.now().Sub(epoch), holderLease+2*time.Second)
}

// Client.Get takes the sort key value and refuses the options that only
// an acquisition uses, rather than ignore them.
func TestGetRefusesAcquisitionOptions(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	f.acquire("k")
	if _, err := f.c.Get(context.Background(), "k"); err != nil {
		t.Fatalf("Get = %v", err)
	}
	for name, opt := range map[string]AcquireOption{
		"WithData":                WithData([]byte("x")),
		"WithReplaceData":         WithReplaceData(false),
		"WithDeleteOnRelease":     WithDeleteOnRelease(),
		"WithAcquireOnlyIfExists": WithAcquireOnlyIfExists(),
		"WithAttributes":          WithAttributes(map[string]any{}),
		"WithReentrant":           WithReentrant(),
		"WithSessionMonitor":      WithSessionMonitor(time.Second, func() {}),
		"WithRefreshPeriodFor":    WithRefreshPeriodFor(time.Hour),
		"WithAdditionalWait":      WithAdditionalWait(time.Second),
	} {
		var oe *dynalease.InvalidError
		if _, err := f.c.Get(context.Background(), "k", opt); !errors.Is(err, dynalease.ErrInvalid) || !errors.As(err, &oe) || oe.Field != name {
			t.Errorf("Get with %s = %v, want an InvalidError naming %s", name, err, name)
		}
	}
}
