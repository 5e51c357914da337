package resourcelocktest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// RunInterfaceConformance runs the tests of resourcelock.Interface as
// subtests of t: the conditions of Create and Update, what each stores and
// returns, identities, and concurrent writes with one winner. Each subtest
// calls newLeases once, for a fresh lease name, and the function it
// returns once per identity (from several goroutines at once in some
// subtests): leases of one name written as that identity.
func RunInterfaceConformance(t *testing.T, newLeases func(t *testing.T) func(identity string) resourcelock.Interface) {
	tests := []struct {
		name string
		run  func(*testing.T, func(string) resourcelock.Interface)
	}{
		{"GetMissing", testGetMissing},
		{"CreateThenGet", testCreateThenGet},
		{"CreateWhileHeld", testCreateWhileHeld},
		{"RenewByHolder", testRenewByHolder},
		{"RenewPreconditions", testRenewPreconditions},
		{"RenewOfARowReleasedBehindTheHoldersBack", testRenewOfARowReleasedBehindTheHoldersBack},
		{"UpdateMissing", testUpdateMissing},
		{"TakeoverOnRVN", testTakeoverOnRVN},
		{"ReleaseThenCreate", testReleaseThenCreate},
		{"TakeoverClearsPreviousData", testTakeoverClearsPreviousData},
		{"LeaseRoundedUpToMilliseconds", testLeaseRoundedUp},
		{"IdentityFilledAndChecked", testIdentityFilledAndChecked},
		{"ConcurrentCreateHasOneWinner", testConcurrentCreate},
		{"ConcurrentTakeoverHasOneWinner", testConcurrentTakeover},
		{"DescribeAndIdentity", testDescribeAndIdentity},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newLeases(t))
		})
	}
}

var wallClock = time.Date(2026, 11, 21, 12, 30, 45, 123_000_000, time.UTC)

// rec returns a record for a write with a fresh RVN.
func rec(lease time.Duration, data string) resourcelock.Record {
	r := resourcelock.Record{
		RVN:           uuid.NewString(),
		LeaseDuration: lease,
		AcquireTime:   wallClock,
		RenewTime:     wallClock.Add(time.Second),
	}
	if data != "" {
		r.Data = []byte(data)
	}
	return r
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustGet(t *testing.T, l resourcelock.Interface) resourcelock.Record {
	t.Helper()
	r, err := l.Get(ctx(t))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return r
}

func wantConflict(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("%s: got %v, want ErrConflict", what, err)
	}
}

func wantSame(t *testing.T, what string, got, want resourcelock.Record) {
	t.Helper()
	if !sameRecord(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func testGetMissing(t *testing.T, newLock func(string) resourcelock.Interface) {
	_, err := newLock("a").Get(ctx(t))
	if !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get on a missing record: %v, want ErrNotFound", err)
	}
}

func testCreateThenGet(t *testing.T, newLock func(string) resourcelock.Interface) {
	a := newLock("a")
	in := rec(3*time.Second, "payload")
	stored, err := a.Create(ctx(t), in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	want := in
	want.HolderIdentity = "a"
	want.Acquisitions = 1
	want.AcquisitionID = in.RVN // an acquisition is named by its write's RVN
	wantSame(t, "Create result", stored, want)
	wantSame(t, "Get after Create", mustGet(t, newLock("b")), want)
}

func testCreateWhileHeld(t *testing.T, newLock func(string) resourcelock.Interface) {
	a, b := newLock("a"), newLock("b")
	first, err := a.Create(ctx(t), rec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Create(ctx(t), rec(time.Second, ""))
	wantConflict(t, "Create while held", err)
	_, err = a.Create(ctx(t), rec(time.Second, ""))
	wantConflict(t, "Create by the holder while held", err)
	wantSame(t, "record after failed Creates", mustGet(t, a), first)
}

func testRenewByHolder(t *testing.T, newLock func(string) resourcelock.Interface) {
	a := newLock("a")
	first, err := a.Create(ctx(t), rec(time.Second, "x"))
	if err != nil {
		t.Fatal(err)
	}
	next := rec(2*time.Second, "y")
	stored, err := a.Update(ctx(t), resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "a"}, next)
	if err != nil {
		t.Fatalf("renewal: %v", err)
	}
	want := next
	want.HolderIdentity = "a"
	want.Acquisitions = first.Acquisitions
	want.AcquisitionID = first.AcquisitionID // a renewal keeps the acquisition
	wantSame(t, "renewal result (transitions unchanged)", stored, want)
	wantSame(t, "Get after renewal", mustGet(t, a), want)
}

func testRenewPreconditions(t *testing.T, newLock func(string) resourcelock.Interface) {
	a, b := newLock("a"), newLock("b")
	first, err := a.Create(ctx(t), rec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Update(ctx(t), resourcelock.Precondition{RVN: uuid.NewString(), HolderIdentity: "a"}, rec(time.Second, ""))
	wantConflict(t, "renewal on a wrong RVN", err)
	_, err = b.Update(ctx(t), resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "b"}, rec(time.Second, ""))
	wantConflict(t, "renewal naming another holder", err)
	wantSame(t, "record after failed renewals", mustGet(t, a), first)
}

// A row marked released without a new RVN (an operator's forced release)
// must not be renewed by its holder: that would silently undo the release.
func testRenewOfARowReleasedBehindTheHoldersBack(t *testing.T, newLock func(string) resourcelock.Interface) {
	a, op := newLock("a"), newLock("a")
	first, err := a.Create(ctx(t), rec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	// Same holder name and RVN, now released: only a client with the
	// holder's identity could write that through this interface, so the
	// "operator" uses it.
	forced := rec(time.Second, "")
	forced.RVN = first.RVN
	forced.Released = true
	if _, err := op.Update(ctx(t), resourcelock.Precondition{RVN: first.RVN}, forced); err != nil {
		t.Fatalf("forced release: %v", err)
	}
	_, err = a.Update(ctx(t), resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "a"}, rec(time.Second, ""))
	wantConflict(t, "renewal of a row released behind the holder's back", err)
	if !mustGet(t, a).Released {
		t.Fatal("the forced release was undone")
	}
}

func testUpdateMissing(t *testing.T, newLock func(string) resourcelock.Interface) {
	a := newLock("a")
	_, err := a.Update(ctx(t), resourcelock.Precondition{RVN: uuid.NewString()}, rec(time.Second, ""))
	wantConflict(t, "takeover of a missing record", err)
	_, err = a.Update(ctx(t), resourcelock.Precondition{RVN: uuid.NewString(), HolderIdentity: "a"}, rec(time.Second, ""))
	wantConflict(t, "renewal of a missing record", err)
	if _, err := a.Get(ctx(t)); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("a failed Update created a record: %v", err)
	}
}

func testTakeoverOnRVN(t *testing.T, newLock func(string) resourcelock.Interface) {
	a, b := newLock("a"), newLock("b")
	first, err := a.Create(ctx(t), rec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	in := rec(4*time.Second, "")
	stored, err := b.Update(ctx(t), resourcelock.Precondition{RVN: first.RVN}, in)
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	want := in
	want.HolderIdentity = "b"
	want.Acquisitions = first.Acquisitions + 1
	want.AcquisitionID = in.RVN
	wantSame(t, "takeover result", stored, want)
	_, err = a.Update(ctx(t), resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "a"}, rec(time.Second, ""))
	wantConflict(t, "renewal by the previous holder", err)
	wantSame(t, "record after takeover", mustGet(t, a), want)
}

func testReleaseThenCreate(t *testing.T, newLock func(string) resourcelock.Interface) {
	a, b := newLock("a"), newLock("b")
	first, err := a.Create(ctx(t), rec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	release := rec(time.Second, "")
	release.Released = true
	released, err := a.Update(ctx(t), resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "a"}, release)
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	if !released.Released || !mustGet(t, b).Released {
		t.Fatal("released record does not read as released")
	}
	stored, err := b.Create(ctx(t), rec(time.Second, ""))
	if err != nil {
		t.Fatalf("Create over a released record: %v", err)
	}
	if stored.Released || stored.HolderIdentity != "b" || stored.Acquisitions != first.Acquisitions+1 {
		t.Fatalf("Create over a released record stored %+v", stored)
	}
}

func testTakeoverClearsPreviousData(t *testing.T, newLock func(string) resourcelock.Interface) {
	a, b := newLock("a"), newLock("b")
	first, err := a.Create(ctx(t), rec(time.Second, "old data"))
	if err != nil {
		t.Fatal(err)
	}
	in := rec(time.Second, "")
	in.AcquireTime, in.RenewTime = time.Time{}, time.Time{}
	stored, err := b.Update(ctx(t), resourcelock.Precondition{RVN: first.RVN}, in)
	if err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, b)
	if got.Data != nil || !got.AcquireTime.IsZero() || !got.RenewTime.IsZero() {
		t.Fatalf("takeover kept the previous holder's attributes: %+v", got)
	}
	wantSame(t, "takeover result", stored, got)
}

func testLeaseRoundedUp(t *testing.T, newLock func(string) resourcelock.Interface) {
	a := newLock("a")
	in := rec(1500*time.Microsecond+time.Nanosecond, "")
	stored, err := a.Create(ctx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if stored.LeaseDuration != 2*time.Millisecond || mustGet(t, a).LeaseDuration != 2*time.Millisecond {
		t.Fatalf("lease %v stored as %v, want 2ms", in.LeaseDuration, stored.LeaseDuration)
	}
}

func testIdentityFilledAndChecked(t *testing.T, newLock func(string) resourcelock.Interface) {
	a := newLock("a")
	in := rec(time.Second, "")
	in.HolderIdentity = "b"
	if _, err := a.Create(ctx(t), in); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Create naming another holder: %v, want dynalease.ErrInvalid", err)
	}
	in.HolderIdentity = ""
	stored, err := a.Create(ctx(t), in)
	if err != nil || stored.HolderIdentity != "a" {
		t.Fatalf("Create with empty holder: %+v, %v", stored, err)
	}
}

// race runs f concurrently n times and returns how many calls succeeded.
func race(t *testing.T, n int, f func(i int) error) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := f(i)
			if err != nil && !errors.Is(err, resourcelock.ErrConflict) {
				t.Errorf("racer %d: %v", i, err)
			}
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return wins
}

const racers = 8

func racerName(i int) string { return "racer-" + string(rune('a'+i)) }

func testConcurrentCreate(t *testing.T, newLock func(string) resourcelock.Interface) {
	wins := race(t, racers, func(i int) error {
		_, err := newLock(racerName(i)).Create(ctx(t), rec(time.Second, ""))
		return err
	})
	if wins != 1 {
		t.Fatalf("%d concurrent Creates succeeded, want exactly 1", wins)
	}
}

func testConcurrentTakeover(t *testing.T, newLock func(string) resourcelock.Interface) {
	first, err := newLock("old").Create(ctx(t), rec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	wins := race(t, racers, func(i int) error {
		_, err := newLock(racerName(i)).Update(ctx(t), resourcelock.Precondition{RVN: first.RVN}, rec(time.Second, ""))
		return err
	})
	if wins != 1 {
		t.Fatalf("%d concurrent takeovers succeeded, want exactly 1", wins)
	}
	if got := mustGet(t, newLock("x")); got.Acquisitions != first.Acquisitions+1 {
		t.Fatalf("transitions after one takeover = %d, want %d", got.Acquisitions, first.Acquisitions+1)
	}
}

func testDescribeAndIdentity(t *testing.T, newLock func(string) resourcelock.Interface) {
	a := newLock("a")
	if a.Identity() != "a" {
		t.Fatalf("Identity() = %q, want %q", a.Identity(), "a")
	}
	if a.Describe() == "" {
		t.Fatal("Describe() is empty")
	}
}

// sameRecord reports whether a and b are the same record.
func sameRecord(a, b resourcelock.Record) bool {
	return a.HolderIdentity == b.HolderIdentity && a.RVN == b.RVN &&
		a.LeaseDuration == b.LeaseDuration && a.Released == b.Released &&
		a.Acquisitions == b.Acquisitions && a.FenceGeneration == b.FenceGeneration &&
		a.AcquisitionID == b.AcquisitionID && a.AcquireTime.Equal(b.AcquireTime) &&
		a.RenewTime.Equal(b.RenewTime) && bytes.Equal(a.Data, b.Data) && a.HandedTo == b.HandedTo
}
