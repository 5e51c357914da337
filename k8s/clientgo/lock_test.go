package clientgo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/k8s/clientgo"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

func newLock(t *testing.T, store rows.Store, identity string) *clientgo.Lock {
	t.Helper()
	l, err := clientgo.New(clientgo.Config{Store: rows.Sealed(store), Name: "controller", Identity: identity})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

func leading(identity string, at time.Time) rl.LeaderElectionRecord {
	return rl.LeaderElectionRecord{HolderIdentity: identity, LeaseDurationSeconds: 15,
		AcquireTime: metav1.NewTime(at), RenewTime: metav1.NewTime(at)}
}

// A missing row is NotFound to client-go, which then creates it.
func TestGetOfAMissingRowIsNotFound(t *testing.T) {
	testNotFound(t, rows.MustOpen(memorystore.New()))
}

func testNotFound(t *testing.T, store rows.Store) {
	l := newLock(t, store, "a")
	_, _, err := l.Get(context.Background())
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing row: %v, want NotFound", err)
	}
	if err := l.Update(context.Background(), leading("a", time.Now())); !errors.Is(err, clientgo.ErrNoRecord) {
		t.Fatalf("Update after a NotFound: %v, want ErrNoRecord", err)
	}
}

// The record round-trips through the row, and the raw bytes differ for
// every write, even two within one second with the same times (client-go
// detects a change by them).
func TestTheRecordRoundTripsAndEveryWriteChangesTheRawBytes(t *testing.T) {
	store := memorystore.New()
	l := newLock(t, rows.MustOpen(store), "a")
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	if err := l.Create(ctx, leading("a", at)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	ler, raw1, err := l.Get(ctx)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if ler.HolderIdentity != "a" || ler.LeaseDurationSeconds != 15 || !ler.AcquireTime.Time.Equal(at) || !ler.RenewTime.Time.Equal(at) || ler.LeaderTransitions != 1 {
		t.Fatalf("Get after Create: %+v", ler)
	}
	if err := l.Update(ctx, leading("a", at)); err != nil { // a renewal with the same times
		t.Fatalf("Update: %v", err)
	}
	ler2, raw2, err := l.Get(ctx)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if string(raw1) == string(raw2) {
		t.Fatal("a renewal left the raw record unchanged: client-go would not see it")
	}
	if ler2.LeaderTransitions != 1 {
		t.Fatalf("a renewal changed the transitions to %d", ler2.LeaderTransitions)
	}
	it, _ := rows.MustRaw(store).Item(resourcelock.Key{Partition: "controller"})
	if it.HolderIdentity != "a" || it.LeaseDuration != 15*time.Second || it.Released || it.RVN == "" {
		t.Fatalf("row: %+v", it.Record)
	}
}

// Update is a compare-and-set on the RVN last read or written: a
// candidate's write based on a row that changed since is refused, and
// changes nothing.
func TestAStaleUpdateIsRefused(t *testing.T) {
	testStaleUpdate(t, rows.MustOpen(memorystore.New()))
}

func testStaleUpdate(t *testing.T, store rows.Store) {
	ctx := context.Background()
	a, b := newLock(t, store, "a"), newLock(t, store, "b")
	released := rl.LeaderElectionRecord{LeaseDurationSeconds: 1}
	if err := a.Create(ctx, leading("a", time.Now())); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := a.Update(ctx, released); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx); err != nil {
		t.Fatal(err)
	}
	takeover := func(id string) rl.LeaderElectionRecord {
		r := leading(id, time.Now())
		r.LeaderTransitions = 2 // client-go's takeover: one above the row's
		return r
	}
	if err := b.Update(ctx, takeover("b")); err != nil {
		t.Fatalf("b's takeover of the released row: %v", err)
	}
	err := a.Update(ctx, takeover("a"))
	if !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("a's Update on the RVN b replaced: %v, want ErrConflict", err)
	}
	ler, _, err := b.Get(ctx)
	if err != nil || ler.HolderIdentity != "b" {
		t.Fatalf("after the refused Update: %+v, %v; want b's record", ler, err)
	}
	if err := a.Update(ctx, takeover("a")); !errors.Is(err, clientgo.ErrNoRecord) {
		t.Fatalf("a's Update again without a Get: %v, want ErrNoRecord", err)
	}
}

// held writes a row held by holder, as another client would.
func held(t *testing.T, store *memorystore.Store, holder, rvn string, transitions int64, lease time.Duration) {
	t.Helper()
	rows.MustRaw(store).PutItem(rows.Item{Key: resourcelock.Key{Partition: "controller"}, Record: resourcelock.Record{
		HolderIdentity: holder, RVN: rvn, LeaseDuration: lease, Acquisitions: transitions, AcquisitionID: rvn}})
}

// client-go's release reads the row, then releases it if it believes it
// leads: a release of a row another holder took meanwhile writes nothing,
// rather than freeing the new holder's row.
func TestAReleaseOfARowAnotherTookWritesNothing(t *testing.T) {
	store := memorystore.New()
	ctx := context.Background()
	a := newLock(t, rows.MustOpen(store), "a")
	if err := a.Create(ctx, leading("a", time.Now())); err != nil {
		t.Fatal(err)
	}
	held(t, store, "b", "b-1", 2, 15*time.Second) // b took it over
	if _, _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, rl.LeaderElectionRecord{LeaseDurationSeconds: 1}); err != nil {
		t.Fatalf("release of b's row: %v, want nil (nothing to release)", err)
	}
	if it, _ := rows.MustRaw(store).Item(resourcelock.Key{Partition: "controller"}); it.RVN != "b-1" || it.Released {
		t.Fatalf("b's row after a's release: %+v, want it unchanged", it.Record)
	}
}

// A renewal (the record's transitions not one above the row's) of a row
// another holder took, read by a Get the elector did not make, is refused
// without a write: it would be a takeover without the wait.
func TestARenewalOverAnotherHoldersRowIsRefused(t *testing.T) {
	store := memorystore.New()
	ctx := context.Background()
	a := newLock(t, rows.MustOpen(store), "a")
	rec := leading("a", time.Now())
	rec.LeaderTransitions = 1
	if err := a.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	held(t, store, "b", "b-1", 2, 15*time.Second)
	if _, _, err := a.Get(ctx); err != nil { // someone else's Get on this Lock
		t.Fatal(err)
	}
	if err := a.Update(ctx, rec); !errors.Is(err, clientgo.ErrNotATakeover) {
		t.Fatalf("a renewal over b's row: %v, want ErrNotATakeover", err)
	}
	if it, _ := rows.MustRaw(store).Item(resourcelock.Key{Partition: "controller"}); it.RVN != "b-1" {
		t.Fatalf("b's row after the refused renewal: %+v", it.Record)
	}
}

// A row naming this identity that this Lock did not write (a restart
// under the same identity) is taken over as a new acquisition: the
// earlier holder's acquisition, and with it its guarded writes and
// fencing token, ends.
func TestARowOfThisIdentityNotWrittenByThisLockIsANewAcquisition(t *testing.T) {
	store := memorystore.New()
	ctx := context.Background()
	held(t, store, "a", "earlier", 3, 15*time.Second)
	a := newLock(t, rows.MustOpen(store), "a")
	ler, _, err := a.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, leading("a", time.Now())); err != nil {
		t.Fatalf("Update: %v", err)
	}
	it, _ := rows.MustRaw(store).Item(resourcelock.Key{Partition: "controller"})
	if it.AcquisitionID == "earlier" || it.Acquisitions != int64(ler.LeaderTransitions)+1 {
		t.Fatalf("row after the Update: %+v, want a new acquisition", it.Record)
	}
}

// The row's lease is shown in whole seconds, rounded up (waiting longer is
// safe), and the acquire and renew times are the row's own.
func TestTheLeaseRoundsUpAndTheTimesAreTheRows(t *testing.T) {
	store := memorystore.New()
	acquired := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rows.MustRaw(store).PutItem(rows.Item{Key: resourcelock.Key{Partition: "controller"}, Record: resourcelock.Record{
		HolderIdentity: "x", RVN: "r", LeaseDuration: 1500 * time.Millisecond,
		AcquireTime: acquired, RenewTime: acquired.Add(time.Minute)}})
	ler, _, err := newLock(t, rows.MustOpen(store), "a").Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ler.LeaseDurationSeconds != 2 || !ler.AcquireTime.Time.Equal(acquired) || !ler.RenewTime.Time.Equal(acquired.Add(time.Minute)) {
		t.Fatalf("record %+v, want a 2 s lease and the row's times", ler)
	}
}

// client-go's release (a record without a holder) marks the row released
// by this identity; others see no holder and may take it at once.
func TestAReleaseMarksTheRowReleased(t *testing.T) {
	store := memorystore.New()
	l := newLock(t, rows.MustOpen(store), "a")
	ctx := context.Background()
	if err := l.Create(ctx, leading("a", time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, rl.LeaderElectionRecord{LeaseDurationSeconds: 1}); err != nil {
		t.Fatalf("release: %v", err)
	}
	it, _ := rows.MustRaw(store).Item(resourcelock.Key{Partition: "controller"})
	if !it.Released || it.HolderIdentity != "a" {
		t.Fatalf("row after the release: %+v", it.Record)
	}
	ler, _, err := newLock(t, rows.MustOpen(store), "b").Get(ctx)
	if err != nil || ler.HolderIdentity != "" {
		t.Fatalf("Get of the released row: %+v, %v; want no holder", ler, err)
	}
}

// lateStore is a store on which a write's answer can be lost after it
// landed, and a read can return the row as it was before that write (the
// read served first, the write applied after it).
type lateStore struct {
	rows.Store
	loseAnswer bool       // the next Update lands, its caller sees a cancel
	stale      *rows.Item // the next Get returns this
}

func (s *lateStore) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	it, err := s.Store.Update(ctx, key, expect, rec, opts)
	if s.loseAnswer && err == nil {
		s.loseAnswer = false
		return rows.Item{}, context.Canceled
	}
	return it, err
}

func (s *lateStore) Get(ctx context.Context, key resourcelock.Key) (rows.Item, error) {
	if s.stale != nil {
		it := *s.stale
		s.stale = nil
		return it, nil
	}
	return s.Store.Get(ctx, key)
}

// A release (ReleaseOnCancel) after a renewal whose answer was lost, and
// which landed after the elector read the row again, still releases: the
// row it finds is its own, and it writes on top of it. So does a renewal.
func TestAWriteOverOwnRenewalThatLandedLateSucceeds(t *testing.T) {
	for _, release := range []bool{true, false} {
		mem := memorystore.New()
		store := &lateStore{Store: rows.MustOpen(mem)}
		l := newLock(t, store, "a")
		ctx := context.Background()
		if err := l.Create(ctx, leading("a", time.Now())); err != nil {
			t.Fatal(err)
		}
		before, _ := rows.MustRaw(mem).Item(resourcelock.Key{Partition: "controller"})
		store.loseAnswer = true
		if err := l.Update(ctx, leading("a", time.Now())); !errors.Is(err, context.Canceled) {
			t.Fatalf("renewal whose answer is lost: %v", err)
		}
		store.stale = &before // the elector's read was served before the renewal landed
		if _, _, err := l.Get(ctx); err != nil {
			t.Fatal(err)
		}
		next := leading("a", time.Now())
		if release {
			next = rl.LeaderElectionRecord{LeaseDurationSeconds: 1}
		}
		if err := l.Update(ctx, next); err != nil {
			t.Fatalf("write (release %t) after the late renewal: %v", release, err)
		}
		it, _ := rows.MustRaw(mem).Item(resourcelock.Key{Partition: "controller"})
		if it.Released != release || it.HolderIdentity != "a" || it.Acquisitions != before.Acquisitions {
			t.Fatalf("row after the write (release %t): %+v", release, it.Record)
		}
	}
}

// A record naming another identity, or no lease, is refused before any
// request.
func TestInvalidRecordsAreRefused(t *testing.T) {
	l := newLock(t, rows.MustOpen(memorystore.New()), "a")
	ctx := context.Background()
	if err := l.Create(ctx, leading("b", time.Now())); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Create naming another holder: %v, want dynalease.ErrInvalid", err)
	}
	if err := l.Create(ctx, rl.LeaderElectionRecord{HolderIdentity: "a"}); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Create without a lease: %v, want dynalease.ErrInvalid", err)
	}
	if _, err := clientgo.New(clientgo.Config{Store: memorystore.New(), Name: "x"}); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("New without an identity: %v, want dynalease.ErrInvalid", err)
	}
}
