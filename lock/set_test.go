package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

// acquireSetAsync runs AcquireSet in the background.
func (f *fixture) acquireSetAsync(keys []string, opts ...AcquireOption) (chan *Lock, chan error) {
	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		l, err := f.c.AcquireSet(context.Background(), keys, opts...)
		if err != nil {
			errs <- err
			return
		}
		locks <- l
	}()
	return locks, errs
}

// wantMembers checks that every key's row carries one RVN written by this
// client, held or released as said, and returns that RVN.
func (f *fixture) wantMembers(released bool, keys ...string) string {
	f.t.Helper()
	var rvn string
	for i, k := range keys {
		it := f.item(k)
		if it.HolderIdentity != ownerName || it.Released != released {
			f.t.Fatalf("row %q: held by %q, released %t; want %q, released %t", k, it.HolderIdentity, it.Released, ownerName, released)
		}
		if i == 0 {
			rvn = it.RVN
		} else if it.RVN != rvn {
			f.t.Fatalf("row %q carries RVN %s, row %q %s: a set writes one RVN to all", k, it.RVN, keys[0], rvn)
		}
	}
	return rvn
}

// waitLost waits for l to end, letting the client's loops block on the
// clock meanwhile (a loop that blocks first must not hold the loss up).
func (f *fixture) waitLost(l *Lock) {
	f.t.Helper()
	deadline := time.After(patience)
	for {
		select {
		case <-l.Done():
			return
		case <-f.idle:
		case <-deadline:
			f.t.Fatal("the set was not lost")
		}
	}
}

// wantMissing checks that none of keys has a row.
func (f *fixture) wantMissing(keys ...string) {
	f.t.Helper()
	for _, k := range keys {
		if it, ok := rows.MustRaw(f.mem).Item(resourcelock.Key{Partition: k}); ok {
			f.t.Fatalf("row %q exists (held by %q): a set must take all its keys or none", k, it.HolderIdentity)
		}
	}
}

func TestAcquireSetTakesFreeKeysInOneWriteAndHoldsThemAsOne(t *testing.T) {
	f := newFixture(t)
	l, err := f.c.AcquireSet(context.Background(), []string{"b", "a", "c", "a"})
	if err != nil {
		t.Fatalf("AcquireSet: %v", err)
	}
	f.waitIdle("heartbeat")
	f.wantOps(faulty.OpWriteMany)
	if got := l.Keys(); !slices.Equal(got, []string{"a", "b", "c"}) || l.Key() != "a,b,c" {
		t.Fatalf("Keys() = %v, Key() = %q; want [a b c] and \"a,b,c\"", got, l.Key())
	}
	first := f.wantMembers(false, "a", "b", "c")
	if l.RVN() != first || !l.ValidUntil().Equal(epoch.Add(validity)) {
		t.Fatalf("lock RVN %s valid until %v; want %s until %v", l.RVN(), l.ValidUntil(), first, epoch.Add(validity))
	}

	f.fc.Step(period)
	f.waitIdle("heartbeat")
	f.wantOps(faulty.OpWriteMany)
	if renewed := f.wantMembers(false, "a", "b", "c"); renewed == first || !l.ValidUntil().Equal(epoch.Add(period+validity)) {
		t.Fatalf("after a heartbeat: RVN %s (was %s), valid until %v; want a new RVN on all three, valid until %v", renewed, first, l.ValidUntil(), epoch.Add(period+validity))
	}

	// Another Acquire of this client waits in process for a key of the set.
	locks, errs := f.acquireAsync("b")
	select {
	case <-locks:
		t.Fatal("Acquire of a key of a held set returned at once")
	case err := <-errs:
		t.Fatalf("Acquire of a key of a held set: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// b may already be taken by the Acquire waiting for it.
	f.wantMembers(true, "a", "c")
	select {
	case lb := <-locks:
		if !lb.IsHeld() || f.item("b").HolderIdentity != ownerName || f.item("b").Released {
			t.Fatal("b not taken after the set's release")
		}
	case err := <-errs:
		t.Fatalf("Acquire after the set's release: %v", err)
	case <-time.After(patience):
		t.Fatal("Acquire of a key did not return after the set's release")
	}
	f.waitIdle("heartbeat")
	f.wantOps(faulty.OpWriteMany, faulty.OpCreate)
}

// A set with one member held by another owner waits, polls the members in
// one read, never writes any member meanwhile, and takes all of them in one
// write once the held member's RVN has stayed unchanged for its holder's
// lease on this client's clock (and a poll more: a fair waiter without a
// place in a queue lets the queued waiters of the member come first). Its
// first key is free, so it has no queue to join.
func TestAcquireSetTakesOverAStaleMemberAfterItsLease(t *testing.T) {
	f := newFixture(t)
	const holderLease = 6 * time.Second
	f.putForeign("b", "java-host", "r1", holderLease)
	locks, errs := f.acquireSetAsync([]string{"a", "b", "c"})
	f.waitIdle("acquire")
	f.wantOps(faulty.OpWriteMany, faulty.OpGetMany)
	due := epoch.Add(holderLease + maxPoll)
	for f.now().Before(due) {
		f.fc.Step(maxPoll)
		if f.now().Before(due) {
			f.waitIdle("acquire")
			f.wantOps(faulty.OpGetMany)
			f.wantMissing("a", "c")
		}
	}
	select {
	case l := <-locks:
		f.waitIdle("heartbeat")
		ops := f.ops()
		if ops[len(ops)-1] != faulty.OpWriteMany {
			t.Fatalf("requests %v, want the takeover WriteMany last", ops)
		}
		f.store.ResetCalls()
		f.wantMembers(false, "a", "b", "c")
		if !l.IsHeld() {
			t.Fatal("the set is not held")
		}
	case err := <-errs:
		t.Fatalf("AcquireSet: %v", err)
	case <-time.After(patience):
		t.Fatal("AcquireSet did not return")
	}
}

func TestAcquireSetGivesUpWithoutTakingAnyKeyWhileAMemberIsRenewed(t *testing.T) {
	f := newFixture(t)
	const holderLease = 4 * time.Second
	f.putForeign("b", "other", "r0", holderLease)
	_, errs := f.acquireSetAsync([]string{"a", "b", "c"}, WithAdditionalWait(2*time.Second))
	f.waitIdle("acquire")
	for i := 1; ; i++ {
		f.putForeign("b", "other", fmt.Sprint("r", i), holderLease) // the holder renews
		if i > 100 {
			t.Fatal("never gave up")
		}
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			continue
		case err := <-errs:
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), `"other"`) {
				t.Fatalf("AcquireSet = %v, want ErrLocked naming the holder", err)
			}
			if waited := f.now().Sub(epoch); waited < holderLease+2*time.Second {
				t.Fatalf("gave up after %v, before the holder's lease + the additional wait", waited)
			}
			f.wantMissing("a", "c")
			if f.item("b").HolderIdentity != "other" {
				t.Fatal("took a renewed member")
			}
			return
		case <-time.After(patience):
			t.Fatal("AcquireSet neither waited nor returned")
		}
	}
}

// When another takes one member, the next heartbeat finds it: the whole set
// is lost, with the member and the reason in the error.
func TestASetIsLostWhenOneMemberIsTaken(t *testing.T) {
	f := newFixture(t)
	l, err := f.c.AcquireSet(context.Background(), []string{"a", "b", "c"})
	if err != nil {
		t.Fatalf("AcquireSet: %v", err)
	}
	f.waitIdle("heartbeat")
	f.putForeign("b", "thief", "stolen", lease)
	f.fc.Step(period)
	f.waitLost(l)
	var lost *dynalease.LostError
	if !errors.As(l.Err(), &lost) || lost.Reason != dynalease.Stolen || lost.HolderIdentity != "thief" || !strings.Contains(lost.Lease, "key b") {
		t.Fatalf("Err() = %v, want stolen by thief, naming key b", l.Err())
	}

	// A released member, likewise (on a fresh client: the first one's
	// heartbeat loop may still report itself idle after the loss).
	f = newFixture(t)
	l, err = f.c.AcquireSet(context.Background(), []string{"x", "y"})
	if err != nil {
		t.Fatalf("AcquireSet: %v", err)
	}
	f.waitIdle("heartbeat")
	y := f.item("y")
	y.Released, y.HolderIdentity = true, "admin"
	rows.MustRaw(f.mem).PutItem(y)
	f.fc.Step(period)
	f.waitLost(l)
	if !errors.As(l.Err(), &lost) || lost.Reason != dynalease.ReleasedElsewhere || !strings.Contains(lost.Lease, "key y") {
		t.Fatalf("Err() = %v, want released elsewhere, naming key y", l.Err())
	}
}

// A set's write whose answer was lost but which landed is adopted as ours
// by the read that follows, with its send time.
func TestASetsLandedWriteWithALostAnswerIsAdopted(t *testing.T) {
	f := newFixture(t)
	f.store.Inject(faulty.OpWriteMany, 1, faulty.Fault{Land: true, Err: errReset})
	l, err := f.c.AcquireSet(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatalf("AcquireSet: %v", err)
	}
	f.waitIdle("heartbeat")
	f.wantOps(faulty.OpWriteMany, faulty.OpGetMany)
	if !l.IsHeld() || !l.ValidUntil().Equal(epoch.Add(validity)) || l.RVN() != f.wantMembers(false, "a", "b") {
		t.Fatal("a landed acquisition of a set was not adopted with its send time")
	}
}

func TestAcquireSetRefusesBeforeAnyRequest(t *testing.T) {
	f := newFixture(t)
	f.freeRun()
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	for what, call := range map[string]func() error{
		"101 keys": func() error { _, err := f.c.AcquireSet(context.Background(), many); return err },
		"no keys":  func() error { _, err := f.c.AcquireSet(context.Background(), nil); return err },
		"data": func() error {
			_, err := f.c.AcquireSet(context.Background(), []string{"a", "b"}, WithData([]byte("x")))
			return err
		},
		"reentrant": func() error {
			_, err := f.c.TryAcquireSet(context.Background(), []string{"a", "b"}, WithReentrant())
			return err
		},
	} {
		err := call()
		if !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("AcquireSet with %s: %v, want dynalease.ErrInvalid", what, err)
		}
		if what == "101 keys" && (err == nil || !strings.Contains(err.Error(), "100")) {
			t.Errorf("AcquireSet with 101 keys: %v, want the limit of 100 named", err)
		}
	}
	f.wantOps()
}

// Two sets of this client over the same keys, taken in opposite orders,
// never deadlock in process: a set takes its slots all at once or none.
func TestOverlappingSetsOfOneClientNeverDeadlock(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	done := make(chan error, 2)
	for _, keys := range [][]string{{"a", "b", "c"}, {"c", "b", "a"}} {
		go func() {
			for range 20 {
				l, err := f.c.AcquireSet(context.Background(), keys)
				if err != nil {
					done <- err
					return
				}
				if err := l.Release(context.Background()); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(patience):
			t.Fatal("two overlapping sets deadlocked")
		}
	}
}

// On a client with fencing tokens, a set's token is one new generation on
// every key's row, above every token any key had before.
func TestASetOnAFencingClientHasOneTokenAboveItsKeys(t *testing.T) {
	f := newFixture(t, WithFencing("fences"), WithHeartbeatPeriod(0))
	single := f.acquire("b")
	before := single.Token()
	if err := single.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := f.c.AcquireSet(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatalf("AcquireSet: %v", err)
	}
	token := l.Token()
	if token <= before || token == 0 {
		t.Fatalf("the set's token %#x is not above b's earlier %#x", token, before)
	}
	for _, k := range []string{"a", "b"} {
		if got := rows.Token(f.item(k).Record); got != token {
			t.Fatalf("row %s carries token %#x, want the set's %#x", k, got, token)
		}
	}
	if err := l.Heartbeat(context.Background()); err != nil || l.Token() != token {
		t.Fatalf("after a heartbeat: token %#x, %v; want %#x kept", l.Token(), err, token)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	later := f.acquire("a")
	if later.Token() <= token {
		t.Fatalf("a later lock on a has token %#x, not above the set's %#x", later.Token(), token)
	}
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprint("m", i)
	}
	if _, err := f.c.AcquireSet(context.Background(), many); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("a set of 51 keys on a fencing client: %v, want dynalease.ErrInvalid", err)
	}
}

// Others taking and freeing a free member again and again do not restart
// the set's wait for a silent holder of another member: the set takes all
// its keys once that holder's RVN has stayed unchanged for its lease.
func TestAFreeMemberChurningDoesNotHoldUpASetsTakeover(t *testing.T) {
	f := newFixture(t)
	const holderLease = 6 * time.Second
	f.putForeign("b", "dead", "d0", holderLease)
	locks, errs := f.acquireSetAsync([]string{"a", "b"})
	f.waitIdle("acquire")
	for i := 1; ; i++ {
		// a is taken and released by others between the set's polls.
		rows.MustRaw(f.mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "a"},
			Record: resourcelock.Record{HolderIdentity: "churner", RVN: fmt.Sprint("c", i), LeaseDuration: holderLease, Released: true}})
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			if i > 100 {
				t.Fatal("the set never took the silent member over")
			}
			continue
		case l := <-locks:
			if f.now().Before(epoch.Add(holderLease)) {
				t.Fatalf("took the set at %v, before the silent holder's lease of %v", f.now().Sub(epoch), holderLease)
			}
			if f.now().After(epoch.Add(holderLease + 2*maxPoll)) {
				t.Fatalf("took the set at %v, long after the silent holder's lease of %v: the churn restarted the wait", f.now().Sub(epoch), holderLease)
			}
			if !l.IsHeld() {
				t.Fatal("the set is not held")
			}
			f.freeRun()
			return
		case err := <-errs:
			t.Fatalf("AcquireSet: %v", err)
		case <-time.After(patience):
			t.Fatal("AcquireSet neither waited nor returned")
		}
	}
}

// A member deleted by another is a loss of the set for that reason; a
// theft found after a heartbeat whose answer was lost (but which landed)
// names the thief.
func TestASetsLossNamesTheKeyAndItsReason(t *testing.T) {
	f := newFixture(t)
	l, err := f.c.AcquireSet(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitIdle("heartbeat")
	rows.MustRaw(f.mem).DeleteItem(resourcelock.Key{Partition: "b"})
	f.fc.Step(period)
	f.waitLost(l)
	var lost *dynalease.LostError
	if !errors.As(l.Err(), &lost) || lost.Reason != dynalease.Deleted || !strings.Contains(lost.Lease, "key b") {
		t.Fatalf("Err() = %v, want deleted, naming key b", l.Err())
	}

	// A fresh client: the first one's heartbeat loop may still report
	// itself idle after the loss, which would be taken for the next
	// heartbeat's.
	f = newFixture(t)
	l, err = f.c.AcquireSet(context.Background(), []string{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitIdle("heartbeat")
	f.store.Inject(faulty.OpWriteMany, 1, faulty.Fault{Land: true, Err: errReset})
	f.fc.Step(period) // a heartbeat that lands unseen, settled by a read
	f.waitIdle("heartbeat")
	if !l.IsHeld() || l.RVN() != f.item("y").RVN {
		t.Fatal("the heartbeat that landed unseen was not adopted")
	}
	f.putForeign("y", "thief", "stolen", lease)
	f.fc.Step(period)
	f.waitLost(l)
	if !errors.As(l.Err(), &lost) || lost.Reason != dynalease.Stolen || lost.HolderIdentity != "thief" || !strings.Contains(lost.Lease, "key y") {
		t.Fatalf("Err() = %v, want stolen by thief, naming key y", l.Err())
	}
}
