package lock_test

// Lost answers and outages against the real server: a write that landed
// while its answer was lost must be recognised by reading the row back,
// and an outage must end a lock as dynalease.Expired, never as dynalease.Stolen.

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
)

// dropOnce makes the next request of op land but lose its answer; the SDK
// then retries it, and the retry's condition fails.
func dropOnce(c *ddbClient, op string) *faulthttp.Handle {
	return c.ft.Add(faulthttp.Rule{Op: op, Times: 1, Fault: faulthttp.DropResponse(faulthttp.DropRetryable)})
}

func TestDynamoDBAmbiguousHeartbeatIsResolvedAsLanded(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient(lock.WithHeartbeatPeriod(0))
	l := mustAcquire(t, c, "k")
	rvn := l.RVN()
	c.ft.Reset()

	dropOnce(c, "UpdateItem")
	sent := time.Now()
	if err := l.Heartbeat(t.Context()); err != nil {
		t.Fatalf("Heartbeat whose first answer was lost: %v", err)
	}
	// The retry's refusal carries the row (ALL_OLD): no read-back, unless
	// the two attempts took longer than the request timeout (a machine
	// too busy to answer in time), which is resolved by a read.
	if took := time.Since(sent); took < testTimeout {
		c.wantCounts(t, "dropped heartbeat: the write, the SDK's retry", map[string]int{"UpdateItem": 2})
	} else {
		c.wantCounts(t, "dropped heartbeat answered after the request timeout: the write, the retry, a read-back", map[string]int{"UpdateItem": 2, "GetItem": 1})
	}
	if !l.IsHeld() || ended(l) || l.Err() != nil {
		t.Fatalf("lock not held after an ambiguous heartbeat: %v", l.Err())
	}
	row := str(e.item("k"), "recordVersionNumber")
	if l.RVN() == rvn || row != l.RVN() {
		t.Errorf("lock RVN %q (was %q), row RVN %q", l.RVN(), rvn, row)
	}
	if v := l.ValidUntil(); v.Before(sent.Add(testValidity)) || v.After(time.Now().Add(testValidity)) {
		t.Errorf("ValidUntil %v after the heartbeat was sent, want the validity %v from its send time", v.Sub(sent), testValidity)
	}

	// The same with a response that arrives after the request timeout.
	rvn = l.RVN()
	c.ft.Add(faulthttp.Rule{Op: "UpdateItem", Times: 1, Fault: faulthttp.DelayResponse(3 * testTimeout)})
	sent = time.Now()
	if err := l.Heartbeat(t.Context()); err != nil {
		t.Fatalf("Heartbeat whose answer came too late: %v", err)
	}
	if d := time.Since(sent); d < testTimeout {
		t.Errorf("Heartbeat returned after %v, before its request timeout", d)
	}
	c.wantCounts(t, "late heartbeat: the write, the read-back", map[string]int{"UpdateItem": 1, "GetItem": 1})
	row = str(e.item("k"), "recordVersionNumber")
	if !l.IsHeld() || l.RVN() == rvn || row != l.RVN() {
		t.Errorf("held %v, lock RVN %q (was %q), row RVN %q", l.IsHeld(), l.RVN(), rvn, row)
	}
	// Counted from when the write was sent, not from when it was resolved
	// (a request timeout later).
	if v := l.ValidUntil(); v.Before(sent.Add(testValidity)) || v.After(sent.Add(testValidity+testTimeout/3)) {
		t.Errorf("ValidUntil %v after the late heartbeat was sent, want its validity from the send time (%v)", v.Sub(sent), testValidity)
	}
}

func TestDynamoDBAmbiguousBackgroundHeartbeatKeepsTheLock(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient()
	l := mustAcquire(t, c, "k")
	c.ft.Reset()
	h := dropOnce(c, "UpdateItem")
	eventually(t, patience, "the dropped heartbeat", func() bool { return h.Hits() == 1 })
	time.Sleep(2 * testHeartbeat)
	if !l.IsHeld() || ended(l) {
		t.Fatalf("lock lost after one ambiguous heartbeat: %v", l.Err())
	}
	if n := c.ft.Count("GetItem"); n != 0 {
		t.Errorf("%d reads; want none: the refused retry carries the row", n)
	}
	eventually(t, patience, "row and lock agree on the RVN", func() bool { return str(e.item("k"), "recordVersionNumber") == l.RVN() })
}

func TestDynamoDBAmbiguousAcquireIsResolvedAsLanded(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient(lock.WithHeartbeatPeriod(0)) // a late acquisition's first heartbeat would be due at once
	for _, tc := range []struct {
		key   string
		fault faulthttp.Fault
		want  map[string]int
	}{
		{"dropped", faulthttp.DropResponse(faulthttp.DropRetryable), map[string]int{"UpdateItem": 2}}, // the retry's refusal carries the row
		{"late", faulthttp.DelayResponse(3 * testTimeout), map[string]int{"UpdateItem": 1, "GetItem": 1}},
	} {
		c.ft.Reset()
		c.ft.Add(faulthttp.Rule{Op: "UpdateItem", Times: 1, Fault: tc.fault})
		start := time.Now()
		l := mustAcquire(t, c, tc.key)
		if d := time.Since(start); d > testTimeout+slack {
			t.Errorf("%s: Acquire took %v; a landed acquisition must not be waited out", tc.key, d)
		}
		c.wantCounts(t, tc.key+" acquisition", tc.want)
		it := e.item(tc.key)
		if str(it, "ownerName") != c.Identity() || str(it, "recordVersionNumber") != l.RVN() || !l.IsHeld() {
			t.Errorf("%s: row %v, lock RVN %q, held %v", tc.key, it, l.RVN(), l.IsHeld())
		}
		if n, ok := it["leaderTransitions"].(*types.AttributeValueMemberN); !ok || n.Value != "1" {
			t.Errorf("%s: leaderTransitions %#v, want one acquisition counted", tc.key, it["leaderTransitions"])
		}
	}
}

func TestDynamoDBAmbiguousReleaseIsResolvedAsLanded(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient(lock.WithHeartbeatPeriod(0))

	l := mustAcquire(t, c, "kept")
	c.ft.Reset()
	dropOnce(c, "UpdateItem")
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release whose first answer was lost: %v", err)
	}
	c.wantCounts(t, "dropped release", map[string]int{"UpdateItem": 2})
	checkJavaReadable(t, "released row", e.item("kept"), c.Identity(), testLease, true)
	if err := l.Err(); err != lock.ErrNotHeld {
		t.Errorf("Err after Release = %v, want ErrNotHeld", err)
	}

	l = mustAcquire(t, c, "deleted", lock.WithDeleteOnRelease())
	c.ft.Reset()
	dropOnce(c, "DeleteItem")
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("deleting Release whose first answer was lost: %v", err)
	}
	c.wantCounts(t, "dropped delete", map[string]int{"DeleteItem": 2, "GetItem": 1}) // the row is gone: no row to carry, a read
	if it := e.item("deleted"); it != nil {
		t.Errorf("row after a deleting release: %v", it)
	}
}

func TestDynamoDBThrottlingShorterThanTheValiditySpares(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	// A lease long enough that only the throttling could end it, not a
	// stall of a busy machine around it.
	const lease = 10 * time.Second
	c := e.newTimedClient(lock.WithLeaseDuration(lease))
	l := mustAcquire(t, c, "k")
	time.Sleep(testHeartbeat)

	throttle := c.ft.Add(faulthttp.Rule{Op: "UpdateItem", Fault: faulthttp.Throttling()})
	time.Sleep(600 * time.Millisecond)
	throttle.Remove()
	lifted := time.Now()
	if n := throttle.Hits(); n < 3 {
		t.Fatalf("only %d throttled requests; no heartbeat was throttled", n)
	}
	if ended(l) {
		t.Fatalf("lock lost during a %v outage: %v", 600*time.Millisecond, l.Err())
	}
	eventually(t, patience, "a heartbeat confirmed after the outage", func() bool {
		return l.ValidUntil().After(lifted.Add(lease - lease/10))
	})
	if !l.IsHeld() || ended(l) || l.Err() != nil {
		t.Fatalf("lock lost: %v", l.Err())
	}
}

func TestDynamoDBThrottlingLongerThanTheValidityExpires(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient()
	l := mustAcquire(t, c, "k")
	time.Sleep(testHeartbeat)

	watch := watchValidity(l)
	c.ft.Add(faulthttp.Rule{Op: "UpdateItem", Fault: faulthttp.Throttling()})
	start := time.Now()
	select {
	case <-l.Done():
	case <-time.After(patience):
		t.Fatal("lock never lost during an endless outage")
	}
	// It ends at its validity, counted from the last heartbeat sent before
	// the outage: not sooner, and not much later. (How long before the
	// outage that heartbeat left depends on the machine's load.)
	w := <-watch
	if w.doneAt.Before(w.lastValid) {
		t.Errorf("lock ended %v before its last ValidUntil", w.lastValid.Sub(w.doneAt))
	}
	if w.doneAt.After(w.lastValid.Add(slack)) {
		t.Errorf("lock ended %v after its last ValidUntil", w.doneAt.Sub(w.lastValid))
	}
	if w.lastValid.After(start.Add(testValidity)) {
		t.Errorf("ValidUntil %v into the outage: a throttled heartbeat extended the lock", w.lastValid.Sub(start))
	}
	lost := lostError(t, l.Err())
	if lost.Reason != dynalease.Expired || lost.HolderIdentity != "" || lost.Cause == nil || !strings.Contains(lost.Cause.Error(), "Throttling") {
		t.Errorf("Err = %v (reason %v, holder %q), want dynalease.Expired caused by throttling", lost, lost.Reason, lost.HolderIdentity)
	}
	// The row still names the owner: nobody stole it.
	if it := e.item("k"); str(it, "ownerName") != c.Identity() {
		t.Errorf("row owner %q", str(it, "ownerName"))
	}
}

func TestDynamoDBLockWithoutHeartbeatsEndsAtItsValidity(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient(lock.WithHeartbeatPeriod(0))
	sent := time.Now()
	l := mustAcquire(t, c, "k")
	validUntil := l.ValidUntil()
	if validUntil.Before(sent.Add(testValidity)) || validUntil.After(time.Now().Add(testValidity)) {
		t.Fatalf("ValidUntil %v after Acquire started, want the validity %v from the write's send time", validUntil.Sub(sent), testValidity)
	}
	// Nothing but the lock's own timer can end it: no request is sent.
	select {
	case <-l.Done():
	case <-time.After(testValidity + patience):
		t.Fatal("a lock without heartbeats never ended")
	}
	if late := time.Since(validUntil); late < 0 || late > slack {
		t.Errorf("Done closed %v after ValidUntil", late)
	}
	if l.IsHeld() {
		t.Error("IsHeld after the validity")
	}
	if lost := lostError(t, l.Err()); lost.Reason != dynalease.Expired || lost.Cause != nil {
		t.Errorf("Err = %v, want dynalease.Expired without a cause", lost)
	}
	c.wantCounts(t, "an unrenewed lock", map[string]int{"UpdateItem": 1})
}
