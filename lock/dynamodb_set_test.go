package lock_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// wantSetRows checks, with raw reads, that every key's row is held by l
// with l's RVN: a set is never held in part. A heartbeat of l may land
// between the reads (they are separate GetItems), so a mismatch is read
// again, a few times, before it counts.
func (e *ddbEnv) wantSetRows(l *lock.Lock) {
	e.t.Helper()
	var bad []string
	for try := 0; try < 10; try++ {
		bad = bad[:0]
		for _, k := range l.Keys() {
			it := e.item(k)
			// The RVN names the set's write: RVNs are never reused.
			if str(it, "recordVersionNumber") != l.RVN() || str(it, "isReleased") != "" {
				bad = append(bad, fmt.Sprintf("row %q: owner %q, RVN %q, released %q; want the set's RVN %q, held", k,
					str(it, "ownerName"), str(it, "recordVersionNumber"), str(it, "isReleased"), l.RVN()))
			}
		}
		if len(bad) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, b := range bad {
		e.t.Error(b)
	}
}

// Three clients take overlapping sets, two of them over the same keys in
// opposite orders, again and again: none deadlocks, none ever holds part of
// a set, and no key is held by two of them at once.
func TestDynamoDBOverlappingSetsNeverDeadlockNorHoldPart(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	sets := [][]string{{"k1", "k2", "k3"}, {"k3", "k2", "k1"}, {"k2", "k4"}}
	var mu sync.Mutex
	holder := map[string]string{}
	var acquisitions atomic.Int32
	ctx, cancel := context.WithTimeout(t.Context(), 3*patience)
	defer cancel()
	var wg sync.WaitGroup
	for i, keys := range sets {
		c := e.newClient(lock.WithHeartbeatPeriod(0)) // holds of 10 ms in a minute's lease
		wg.Go(func() {
			for range 8 {
				l, err := c.AcquireSet(ctx, keys)
				if err != nil {
					t.Errorf("client %d: AcquireSet(%v): %v", i, keys, err)
					return
				}
				mu.Lock()
				for _, k := range l.Keys() {
					if h := holder[k]; h != "" {
						t.Errorf("key %s held by %s and %s at once", k, h, c.Identity())
					}
					holder[k] = c.Identity()
				}
				mu.Unlock()
				e.wantSetRows(l)
				acquisitions.Add(1)
				time.Sleep(10 * time.Millisecond)
				mu.Lock()
				for _, k := range l.Keys() {
					holder[k] = ""
				}
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					t.Errorf("client %d: Release: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := acquisitions.Load(); n != 24 {
		t.Fatalf("%d acquisitions, want 24", n)
	}
}

// The most keys a transaction holds: 99 and 100 keys commit in one
// request each, and 101 are refused before any request, naming the limit.
func TestDynamoDBSetSizeLimit(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient(lock.WithHeartbeatPeriod(0)) // only the requests counted here
	keys := func(n int) []string {
		ks := make([]string, n)
		for i := range ks {
			ks[i] = fmt.Sprintf("item-%03d", i)
		}
		return ks
	}
	for _, n := range []int{99, 100} {
		l, err := c.AcquireSet(t.Context(), keys(n))
		if err != nil {
			t.Fatalf("AcquireSet of %d keys: %v", n, err)
		}
		c.wantCounts(t, fmt.Sprintf("AcquireSet of %d free keys", n), map[string]int{"TransactWriteItems": 1})
		if len(l.Keys()) != n {
			t.Fatalf("the set holds %d keys, want %d", len(l.Keys()), n)
		}
		e.wantSetRows(l)
		mustRelease(t, l)
		c.wantCounts(t, fmt.Sprintf("Release of %d keys", n), map[string]int{"TransactWriteItems": 1})
	}
	_, err := c.AcquireSet(t.Context(), keys(101))
	if !errors.Is(err, dynalease.ErrInvalid) || !strings.Contains(err.Error(), "100") {
		t.Fatalf("AcquireSet of 101 keys: %v, want dynalease.ErrInvalid naming the limit of 100", err)
	}
	c.wantCounts(t, "AcquireSet of 101 keys", map[string]int{})
}

// A member held by an AWS Java lock client blocks the set, which takes
// none of its keys meanwhile, and Java clients see each key of a held set
// as held.
func TestDynamoDBJavaHeldMemberBlocksASet(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx := t.Context()
	// A Java lease of four test leases, heartbeats every quarter test
	// lease: a busy machine that delays or fails a few heartbeats does not
	// let it lapse, and the set rightly take it over, within the test's
	// two test leases of waiting.
	java := javaHost{e: e, owner: "host-j.example", lease: 4 * testLease}
	rvn, err := java.acquireNew(ctx, "m2")
	if err != nil {
		t.Fatalf("Java acquire: %v", err)
	}
	c := e.newClient() // not a timeline: a read under load gets the untimed request timeout
	if _, err := c.TryAcquireSet(ctx, []string{"m1", "m2", "m3"}); !errors.Is(err, lock.ErrLocked) || !strings.Contains(err.Error(), java.owner) {
		t.Fatalf("TryAcquireSet with a Java-held member: %v, want ErrLocked naming %s", err, java.owner)
	}
	for _, k := range []string{"m1", "m3"} {
		if it := e.item(k); len(it) != 0 {
			t.Fatalf("row %s written while a member was held: a set takes all keys or none", k)
		}
	}
	// The Java host keeps renewing, then releases: the set waits, then
	// takes all three.
	beats := java.startHeartbeats("m2", rvn, testLease/4)
	got := make(chan error, 1)
	var l *lock.Lock
	go func() {
		var err error
		l, err = c.AcquireSet(ctx, []string{"m1", "m2", "m3"}, lock.WithAdditionalWait(patience))
		got <- err
	}()
	time.Sleep(2 * testLease)
	select {
	case err := <-got:
		t.Fatalf("AcquireSet returned while the Java host held a member: %v", err)
	default:
	}
	res := beats.halt(t)
	if err := java.release(ctx, "m2", res.lastRVN); err != nil {
		t.Fatalf("Java release: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("AcquireSet after the Java release: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("AcquireSet did not return after the Java release")
	}
	e.wantSetRows(l)
	for _, k := range l.Keys() {
		if _, err := java.acquireNew(ctx, k); !conditionFailed(err) {
			t.Fatalf("Java acquire of %s while the set holds it: %v, want a failed condition", k, err)
		}
		if _, err := java.acquireReleased(ctx, k); !conditionFailed(err) {
			t.Fatalf("Java acquire of released %s while the set holds it: %v, want a failed condition", k, err)
		}
	}
	mustRelease(t, l)
}

// Guard over a set checks every key's row in its transaction: it commits
// while the set is whole, and once another takes one key it applies
// nothing and the set is lost, naming the key. Its items and checks
// together fit in one transaction.
func TestDynamoDBGuardOverASetChecksEveryKey(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient(lock.WithHeartbeatPeriod(0))
	l, err := c.AcquireSet(t.Context(), []string{"g1", "g2"})
	if err != nil {
		t.Fatalf("AcquireSet: %v", err)
	}
	put := func(id string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(e.table), Item: map[string]types.AttributeValue{
			e.pk: &types.AttributeValueMemberS{Value: id}, "v": &types.AttributeValueMemberS{Value: "guarded"},
		}}}
	}
	c.ft.Reset()
	if err := l.GuardItems(t.Context(), put("data-1")); err != nil {
		t.Fatalf("Guard over a whole set: %v", err)
	}
	c.wantCounts(t, "Guard", map[string]int{"TransactWriteItems": 1})
	if str(e.item("data-1"), "v") != "guarded" {
		t.Fatal("the guarded write did not land")
	}

	e.put(javaItem("g2", "thief", "stolen-rvn", testLease, nil, false))
	err = l.GuardItems(t.Context(), put("data-2"))
	var lost *dynalease.LostError
	if !errors.Is(err, dynalease.ErrLost) || !errors.Is(err, resourcelock.ErrGuardLost) || !errors.As(err, &lost) ||
		lost.Reason != dynalease.Stolen || lost.HolderIdentity != "thief" || !strings.Contains(lost.Lease, "key g2") {
		t.Fatalf("Guard after a key was taken: %v, want ErrLost and ErrGuardLost, stolen by thief, naming key g2", err)
	}
	if len(e.item("data-2")) != 0 {
		t.Fatal("a guarded write landed after a key of the set was taken")
	}
	if l.IsHeld() || !errors.Is(l.Err(), dynalease.ErrLost) {
		t.Fatalf("the set after a refused guard: held %t, Err %v; want lost", l.IsHeld(), l.Err())
	}

	keys := make([]string, 99)
	for i := range keys {
		keys[i] = fmt.Sprintf("big-%02d", i)
	}
	big, err := c.AcquireSet(t.Context(), keys)
	if err != nil {
		t.Fatalf("AcquireSet of 99 keys: %v", err)
	}
	c.ft.Reset()
	if err := big.GuardItems(t.Context(), put("data-3"), put("data-4")); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Guard of 2 items over 99 keys: %v, want dynalease.ErrInvalid (101 actions)", err)
	}
	c.wantCounts(t, "a Guard refused before sending", map[string]int{})
	if err := big.GuardItems(t.Context(), put("data-3")); err != nil {
		t.Fatalf("Guard of 1 item over 99 keys: %v", err)
	}
	mustRelease(t, big)
}

// DynamoDB cancels a transaction, read or write, while another write to
// one of its rows is under way (TransactionConflict): a set's reads and
// writes try again a few times, and when the conflicts last, a heartbeat
// fails without the set being lost.
func TestDynamoDBSetRidesOutTransactionConflicts(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient(lock.WithHeartbeatPeriod(0))
	other := e.newClient()
	held := mustAcquire(t, other, "tc-2")
	conflict := func(op string, times int) {
		c.ft.Add(faulthttp.Rule{Op: op, Times: times, Fault: faulthttp.Status(http.StatusBadRequest, fgCanceled("TransactionConflict", "None"))})
	}
	conflict("TransactGetItems", 2)
	if _, err := c.TryAcquireSet(t.Context(), []string{"tc-1", "tc-2"}); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("TryAcquireSet with a held key and two conflicted reads: %v, want ErrLocked", err)
	}
	mustRelease(t, held)
	conflict("TransactWriteItems", 2)
	l, err := c.AcquireSet(t.Context(), []string{"tc-1", "tc-2"})
	if err != nil {
		t.Fatalf("AcquireSet with two conflicted writes: %v", err)
	}
	e.wantSetRows(l)
	conflict("TransactWriteItems", 100)
	err = l.Heartbeat(t.Context())
	c.ft.Clear()
	if err == nil || errors.Is(err, dynalease.ErrLost) || !l.IsHeld() {
		t.Fatalf("a heartbeat whose transactions kept conflicting: %v, held %t; want a failure, still held", err, l.IsHeld())
	}
	if err := l.Heartbeat(t.Context()); err != nil {
		t.Fatalf("the next heartbeat: %v", err)
	}
	mustRelease(t, l)
}
