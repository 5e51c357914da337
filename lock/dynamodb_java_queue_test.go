package lock_test

// The AWS Java DynamoDB Lock Client against rows that carry the fair-waiting
// queue (attributes queue and handoff), on DynamoDB Local. The Java client
// is emulated through the SDK as in dynamodb_java_interop_test.go, with its
// acquireLock loop: it reads the row every refresh period; it creates a
// missing row and takes a released one at once; otherwise it takes the row
// over, with a write conditioned on the RVN, once that RVN has stayed
// unchanged for the row's leaseDuration on its own clock, counted from the
// read that first returned it. Its acquire is a whole-item PutItem (it
// drops every attribute it does not know, the queue included) or, with
// updateExistingLockRecord (1.2.0 and later), an UpdateItem that keeps them.
//
// What these tests hold the library to (lock package doc, "Fair waiting"):
// a Java client may jump the queue, never cause two holders; the queue
// survives Java heartbeats and releases with the row kept; Go waiters whose
// entry a Java acquire dropped join again; a handed-over row is held to a
// Java client, which takes it over only after the head's lease. Each test
// waits for the states it needs (a join visible in the row, a Java write
// confirmed) rather than for fixed times, so the order of events is the
// test's whatever the machine's speed; a Go waiter that must not race the
// Java client is cut off (its requests fail before they are sent) for the
// span of the Java write, and takes part again afterwards.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
)

const (
	// javaQueueLease is the lease of Java holders that never go silent:
	// long enough that no stall of a loaded machine between two of their
	// heartbeats lets anybody take them over.
	javaQueueLease = 3 * time.Second
	javaQueueBeat  = 250 * time.Millisecond
	// javaPoll is the emulated Java client's refresh period.
	javaPoll = 50 * time.Millisecond
	// forever is the additional wait of Go waiters that must not give up.
	forever = time.Hour
)

// get reads a row with a consistent GetItem (nil when there is none), from
// any goroutine.
func (e *ddbEnv) get(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	out, err := e.raw.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.table),
		Key:            e.rawKey(key, ""),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// releaseDelete is the Java release with deleteLock=true (its default).
func (j javaHost) releaseDelete(ctx context.Context, key, cur string) error {
	cond := "#r = :rvn AND #o = :me"
	_, err := j.e.raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(j.e.table),
		Key:                       j.e.rawKey(key, ""),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names(cond),
		ExpressionAttributeValues: map[string]types.AttributeValue{":rvn": sv(cur), ":me": sv(j.owner)},
	})
	return err
}

// javaClient is the emulated Java client's acquireLock for one owner.
type javaClient struct {
	javaHost
	// update is updateExistingLockRecord: acquire with an UpdateItem of
	// its own attributes (and REMOVE isReleased, as 1.4.0 does) instead
	// of a whole-item PutItem.
	update bool
	reads  atomic.Int32 // reads so far, to wait until it watches a row
}

func newJavaClient(e *ddbEnv, owner string, update bool) *javaClient {
	return &javaClient{javaHost: javaHost{e: e, owner: owner, lease: javaQueueLease}, update: update}
}

// Ways a Java client acquires a lock, with the condition of each.
const (
	javaNew      = "new"      // attribute_not_exists(key)
	javaReleased = "released" // attribute_exists(key) AND isReleased = "1"
	javaStale    = "stale"    // attribute_exists(key) AND recordVersionNumber = the RVN watched
)

// write sends the Java client's acquiring write of the kind how; seen is
// the RVN watched, for javaStale. It returns the RVN written.
func (j *javaClient) write(ctx context.Context, key, how, seen string) (string, error) {
	var cond string
	values := map[string]types.AttributeValue{}
	switch how {
	case javaNew:
		cond = "attribute_not_exists(#k)"
	case javaReleased:
		cond = "attribute_exists(#k) AND #rel = :one"
		values[":one"] = sv("1")
	case javaStale:
		cond = "attribute_exists(#k) AND #r = :seen"
		values[":seen"] = sv(seen)
	default:
		return "", fmt.Errorf("no Java acquisition %q", how)
	}
	if !j.update {
		return j.put(ctx, key, cond, values)
	}
	rvn := uuid.NewString()
	update := "SET #o = :me, #l = :ld, #r = :new, #d = :data"
	if how != javaNew {
		update += " REMOVE #rel"
	}
	values[":me"], values[":ld"], values[":new"] = sv(j.owner), sv(strconv.FormatInt(j.lease.Milliseconds(), 10)), sv(rvn)
	values[":data"] = &types.AttributeValueMemberB{Value: []byte("java:" + j.owner)}
	_, err := j.e.raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(j.e.table),
		Key:                       j.e.rawKey(key, ""),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names(update, cond),
		ExpressionAttributeValues: values,
	})
	return rvn, err
}

// javaLock is a lock the emulated Java client holds: until its lease has
// passed since its last confirmed write was sent.
type javaLock struct {
	j    *javaClient
	key  string
	rvn  string
	sent time.Time // when the last confirmed write left
	how  string    // javaNew, javaReleased or javaStale
	// For javaStale: the RVN watched unchanged, since when (the return
	// of the read that first showed it) and for how long (the row's
	// leaseDuration).
	watched     string
	watchedFrom time.Time
	waited      time.Duration
	// queue is the queue of the last row read before the acquiring write:
	// the Go waiters the Java client jumped.
	queue []string
}

// acquire is the Java client's acquireLock on key with an unbounded wait:
// it returns once one of its acquiring writes lands, or with ctx's error.
func (j *javaClient) acquire(ctx context.Context, key string) (*javaLock, error) {
	var watched string
	var from time.Time
	var lease time.Duration
	for {
		it, err := j.e.get(ctx, key)
		returned := time.Now()
		if err != nil {
			return nil, err
		}
		j.reads.Add(1)
		how := ""
		switch {
		case it == nil:
			how = javaNew
		case str(it, "isReleased") == "1":
			how = javaReleased
		case str(it, "recordVersionNumber") != watched:
			// A new RVN (or the first): its lease starts now.
			watched, from = str(it, "recordVersionNumber"), returned
			ms, err := strconv.ParseInt(str(it, "leaseDuration"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("leaseDuration %q: %w", str(it, "leaseDuration"), err)
			}
			lease = time.Duration(ms) * time.Millisecond
		case time.Since(from) > lease:
			how = javaStale
		}
		if how != "" {
			sent := time.Now()
			rvn, err := j.write(ctx, key, how, watched)
			if err == nil {
				l := &javaLock{j: j, key: key, rvn: rvn, sent: sent, how: how, queue: queueOwnersOf(it)}
				if how == javaStale {
					l.watched, l.watchedFrom, l.waited = watched, from, lease
				}
				return l, nil
			}
			if !conditionFailed(err) {
				return nil, err
			}
			// Someone else was faster: read again after a period.
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(javaPoll):
		}
	}
}

type javaAcquired struct {
	l   *javaLock
	err error
}

// acquireAsync runs acquire in a goroutine, until it acquires or the test
// ends.
func (j *javaClient) acquireAsync(t *testing.T, key string) <-chan javaAcquired {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	ch := make(chan javaAcquired, 1)
	go func() {
		l, err := j.acquire(ctx, key)
		ch <- javaAcquired{l, err}
	}()
	return ch
}

// awaitJava waits for the Java acquire pending in ch, which must succeed.
func awaitJava(t *testing.T, e *ddbEnv, ch <-chan javaAcquired, key string) *javaLock {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Java acquire: %v", r.err)
		}
		return r.l
	case <-time.After(patience):
		t.Fatalf("the Java client never acquired the lock; row %v", e.item(key))
	}
	return nil
}

// heartbeat is the Java heartbeat of the lock.
func (l *javaLock) heartbeat(ctx context.Context) error {
	sent := time.Now()
	rvn, err := l.j.heartbeat(ctx, l.key, l.rvn)
	if err == nil {
		l.rvn, l.sent = rvn, sent
	}
	return err
}

// release is the Java release of the lock, with the row kept or deleted.
func (l *javaLock) release(ctx context.Context, del bool) error {
	if del {
		return l.j.releaseDelete(ctx, l.key, l.rvn)
	}
	return l.j.release(ctx, l.key, l.rvn)
}

// holders counts, in process, who holds one lock: every holder, Go or
// Java, enters once its acquiring write is confirmed and leaves before it
// sends its release (a holder that dies leaves when it stops), so two
// inside at once is two holders. A holder that went silent sets notBefore:
// the next one to enter may not have its lock before then.
type holders struct {
	t         *testing.T
	mu        sync.Mutex
	in        []string
	order     []string
	notBefore time.Time
}

func (h *holders) enter(who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.in = append(h.in, who)
	h.order = append(h.order, who)
	if len(h.in) > 1 {
		h.t.Errorf("%d holders at once: %v", len(h.in), h.in)
	}
	if now.Before(h.notBefore) {
		h.t.Errorf("%s holds the lock %v before the lease of the silent holder ran out", who, h.notBefore.Sub(now))
	}
	h.notBefore = time.Time{}
}

func (h *holders) leave(who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.Index(h.in, who)
	if i < 0 {
		h.t.Errorf("%s leaves, but holders are %v", who, h.in)
		return
	}
	h.in = slices.Delete(h.in, i, i+1)
}

// died is leave for a holder that went silent after a write sent at sent:
// nobody may hold the lock before its lease has passed since.
func (h *holders) died(who string, sent time.Time, lease time.Duration) {
	h.leave(who)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notBefore = sent.Add(lease)
}

func (h *holders) acquisitions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.order)
}

// heldBy reads the row, from any goroutine, and checks that it names owner
// as its unreleased holder, at rvn unless rvn is empty. It returns the row,
// or what is wrong.
func (e *ddbEnv) heldBy(ctx context.Context, key, owner, rvn string) (map[string]types.AttributeValue, error) {
	it, err := e.get(ctx, key)
	switch {
	case err != nil:
		return nil, err
	case it == nil:
		return nil, fmt.Errorf("no row, want one held by %s", owner)
	case str(it, "ownerName") != owner || str(it, "isReleased") != "" || (rvn != "" && str(it, "recordVersionNumber") != rvn):
		return nil, fmt.Errorf("row owner %q, released %q, RVN %q; want held by %s at %q",
			str(it, "ownerName"), str(it, "isReleased"), str(it, "recordVersionNumber"), owner, rvn)
	}
	return it, nil
}

// wantHeldBy is heldBy in the test's goroutine.
func (e *ddbEnv) wantHeldBy(what, key, owner, rvn string) map[string]types.AttributeValue {
	e.t.Helper()
	it, err := e.heldBy(e.t.Context(), key, owner, rvn)
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
	return it
}

// waitSent waits until c has sent n requests since from. An Acquire sends
// one request at a time, so the answer to all but the last has come.
func waitSent(t *testing.T, c *ddbClient, from time.Time, n int) {
	t.Helper()
	eventually(t, patience, fmt.Sprintf("%s sends %d requests", c.Identity(), n), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		sent := 0
		for _, r := range c.sent {
			if r.at.After(from) {
				sent++
			}
		}
		return sent >= n
	})
}

// cutOff makes every request of c fail before it is sent, until the
// returned function is called: c takes no part meanwhile, as if it were
// dead, and takes part again afterwards.
func cutOff(c *ddbClient) (heal func()) {
	h := c.ft.Add(faulthttp.Rule{Fault: faulthttp.FailBeforeSend(nil)})
	return func() { h.Remove() }
}

// waitQueueSet waits until the row's queue lists exactly want, in any
// order.
func (e *ddbEnv) waitQueueSet(key string, want ...string) {
	e.t.Helper()
	want = slices.Sorted(slices.Values(want))
	eventually(e.t, patience, fmt.Sprintf("queue holds %v", want), func() bool {
		return slices.Equal(slices.Sorted(slices.Values(e.queueOwners(key))), want)
	})
}

// notReturned fails the test if the Acquire pending in ch has returned.
func notReturned(t *testing.T, ch <-chan acquired, who, while string) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("Acquire by %s returned (lock %t, error %v) %s", who, a.l != nil, a.err, while)
	default:
	}
}

// await waits for the Acquire pending in ch, which must succeed.
func await(t *testing.T, e *ddbEnv, ch <-chan acquired, key, who string) *lock.Lock {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("Acquire by %s: %v", who, a.err)
		}
		return a.l
	case <-time.After(patience):
		t.Fatalf("Acquire by %s never returned; row %v", who, e.item(key))
	}
	return nil
}

// takeTurns has the Go waiters a and b, whose Acquires of key are pending
// in pa and pb and who are both queued or about to queue again, get the
// lock one after the other: whichever gets it first finds the other
// queued behind it, the other does not get it meanwhile, and the first
// one's release hands it over.
func takeTurns(t *testing.T, e *ddbEnv, h *holders, key string, a, b *ddbClient, pa, pb <-chan acquired) {
	t.Helper()
	var first acquired
	var winner, loser *ddbClient
	var rest <-chan acquired
	select {
	case first = <-pa:
		winner, loser, rest = a, b, pb
	case first = <-pb:
		winner, loser, rest = b, a, pa
	case <-time.After(patience):
		t.Fatalf("no Go waiter got the lock; row %v", e.item(key))
	}
	if first.err != nil {
		t.Fatalf("Acquire by %s: %v", winner.Identity(), first.err)
	}
	h.enter(winner.Identity())
	if it := e.wantHeldBy("first Go acquisition", key, winner.Identity(), ""); str(it, "dynaleaseHandoff") != "" {
		t.Fatalf("a Go holder's row carries the hand-over %q", str(it, "dynaleaseHandoff"))
	}
	e.waitQueue(key, loser.Identity())
	notReturned(t, rest, loser.Identity(), "while "+winner.Identity()+" holds the lock")
	if !first.l.IsHeld() {
		t.Fatalf("%s lost the lock while the other waited: %v", winner.Identity(), first.l.Err())
	}
	h.leave(winner.Identity())
	mustRelease(t, first.l)
	second := await(t, e, rest, key, loser.Identity())
	h.enter(loser.Identity())
	if it := e.wantHeldBy("second Go acquisition", key, loser.Identity(), ""); str(it, "dynaleaseHandoff") != "" {
		t.Fatalf("a Go holder's row carries the hand-over %q", str(it, "dynaleaseHandoff"))
	}
	h.leave(loser.Identity())
	mustRelease(t, second)
	if it := e.item(key); str(it, "isReleased") != "1" || len(queueOwnersOf(it)) != 0 {
		t.Fatalf("after the last release: released %q, queue %v", str(it, "isReleased"), queueOwnersOf(it))
	}
}

// javaHoldsWithGoQueue starts a Java holder of key that heartbeats, and
// two Go waiters that queue behind it in turn. It returns the holder's
// heartbeats, the waiters and their pending Acquires.
func javaHoldsWithGoQueue(t *testing.T, e *ddbEnv, key string) (java javaHost, beats *javaBeats, a, b *ddbClient, pa, pb <-chan acquired) {
	t.Helper()
	ctx := t.Context()
	java = javaHost{e: e, owner: "java-holder", lease: javaQueueLease}
	rvn, err := java.acquireNew(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	beats = java.startHeartbeats(key, rvn, javaQueueBeat)
	t.Cleanup(func() {
		select {
		case <-beats.stop:
		default:
			close(beats.stop)
		}
	})
	// Untimed: their locks must not run out because the machine stalled,
	// and nobody waits out their leases.
	a, b = e.newClient(), e.newClient()
	pa = acquireAsync(ctx, a, key, lock.WithAdditionalWait(forever))
	e.waitQueue(key, a.Identity())
	pb = acquireAsync(ctx, b, key, lock.WithAdditionalWait(forever))
	e.waitQueue(key, a.Identity(), b.Identity())
	return java, beats, a, b, pa, pb
}

// waitJavaHeartbeats waits until the row has shown n more RVNs of owner's
// heartbeats, checking at each read that its queue is still want.
func (e *ddbEnv) waitJavaHeartbeats(key, owner string, n int, want ...string) {
	e.t.Helper()
	rvns := map[string]bool{}
	eventually(e.t, patience, fmt.Sprintf("%d heartbeats of %s", n, owner), func() bool {
		it := e.item(key)
		if got := queueOwnersOf(it); str(it, "ownerName") != owner || !slices.Equal(got, want) {
			e.t.Fatalf("while %s heartbeats: row owner %q, queue %v; want queue %v", owner, str(it, "ownerName"), got, want)
		}
		rvns[str(it, "recordVersionNumber")] = true
		return len(rvns) > n
	})
}

// A Java holder of a row where Go waiters queue: the waiters join (the row
// gains the queue), the Java heartbeats (UpdateItem of its own attributes)
// keep the queue, and when the Java client releases, keeping the row
// (isReleased = "1", queue kept) or deleting it (queue gone), one Go
// waiter gets the lock, the other queues behind it (again, after a delete)
// and gets it from its release. Never two holders.
func TestDynamoDBJavaHolderKeepsTheGoQueueAndItsReleaseLetsAGoWaiterIn(t *testing.T) {
	t.Parallel()
	for _, del := range []bool{false, true} {
		t.Run(map[bool]string{false: "row kept", true: "row deleted"}[del], func(t *testing.T) {
			t.Parallel()
			e := newDDBEnv(t, ddbtest.TableSpec{})
			h := &holders{t: t}
			h.enter("java-holder")
			java, beats, a, b, pa, pb := javaHoldsWithGoQueue(t, e, "k")
			e.waitJavaHeartbeats("k", java.owner, 3, a.Identity(), b.Identity())
			notReturned(t, pa, a.Identity(), "while the Java client holds the lock")
			notReturned(t, pb, b.Identity(), "while the Java client holds the lock")

			// The waiters are cut off across the release, so that the
			// row can be seen as the Java release leaves it.
			healA, healB := cutOff(a), cutOff(b)
			last := beats.halt(t)
			h.leave(java.owner)
			if del {
				if err := java.releaseDelete(t.Context(), "k", last.lastRVN); err != nil {
					t.Fatalf("Java release (deleted): %v", err)
				}
				if it := e.item("k"); it != nil {
					t.Fatalf("row after the Java release (deleted): %v", it)
				}
			} else {
				if err := java.release(t.Context(), "k", last.lastRVN); err != nil {
					t.Fatalf("Java release (kept): %v", err)
				}
				if it := e.item("k"); str(it, "isReleased") != "1" || !slices.Equal(queueOwnersOf(it), []string{a.Identity(), b.Identity()}) {
					t.Fatalf("after the Java release (kept): released %q, queue %v; want released with the queue kept", str(it, "isReleased"), queueOwnersOf(it))
				}
			}
			healA()
			healB()
			takeTurns(t, e, h, "k", a, b, pa, pb)
			if got := h.acquisitions(); len(got) != 3 {
				t.Fatalf("acquisitions %v", got)
			}
		})
	}
}

// A Java acquire jumps two queued Go waiters: the Java holder releases
// keeping the row, and another Java client takes the released row before
// the Go waiters can (they are cut off for that span). With a whole-item
// PutItem the queue is gone: the waiters find their entry gone and join
// again, behind the new Java holder. With updateExistingLockRecord the
// UpdateItem keeps the queue and the waiters their places. The new Java
// holder's heartbeats keep the queue; on its release the Go waiters get
// the lock in turn. Never two holders.
func TestDynamoDBJavaAcquireOverTheGoQueueDropsOrKeepsIt(t *testing.T) {
	t.Parallel()
	for _, update := range []bool{false, true} {
		t.Run(map[bool]string{false: "PutItem", true: "UpdateItem"}[update], func(t *testing.T) {
			t.Parallel()
			e := newDDBEnv(t, ddbtest.TableSpec{})
			ctx := t.Context()
			h := &holders{t: t}
			h.enter("java-holder")
			java, beats, a, b, pa, pb := javaHoldsWithGoQueue(t, e, "k")

			healA, healB := cutOff(a), cutOff(b)
			last := beats.halt(t)
			h.leave(java.owner)
			if err := java.release(ctx, "k", last.lastRVN); err != nil {
				t.Fatalf("Java release: %v", err)
			}
			jumper := newJavaClient(e, "java-jumper", update)
			jctx, cancel := context.WithTimeout(ctx, patience)
			defer cancel()
			jl, err := jumper.acquire(jctx, "k")
			if err != nil {
				t.Fatalf("Java acquire of the released row: %v", err)
			}
			h.enter(jumper.owner)
			if jl.how != javaReleased || !slices.Equal(jl.queue, []string{a.Identity(), b.Identity()}) {
				t.Fatalf("the Java client acquired (%s) a row with queue %v; want the released row with both waiters queued", jl.how, jl.queue)
			}
			it := e.wantHeldBy("Java acquisition", "k", jumper.owner, jl.rvn)
			want := []string{a.Identity(), b.Identity()}
			if !update {
				want = nil
			}
			if got := queueOwnersOf(it); !slices.Equal(got, want) {
				t.Fatalf("queue after the Java acquire %v, want %v", got, want)
			}

			healed := time.Now()
			healA()
			healB()
			if update {
				// The waiters keep their places, once they have seen
				// the row again.
				waitSent(t, a, healed, 2)
				waitSent(t, b, healed, 2)
				if got := e.queueOwners("k"); !slices.Equal(got, []string{a.Identity(), b.Identity()}) {
					t.Fatalf("queue %v after the waiters read the Java holder's row, want [%s %s]", got, a.Identity(), b.Identity())
				}
			} else {
				e.waitQueueSet("k", a.Identity(), b.Identity())
			}
			queued := e.queueOwners("k")
			jbeats := jumper.startHeartbeats("k", jl.rvn, javaQueueBeat)
			e.waitJavaHeartbeats("k", jumper.owner, 3, queued...)
			notReturned(t, pa, a.Identity(), "while the Java client holds the lock")
			notReturned(t, pb, b.Identity(), "while the Java client holds the lock")
			jlast := jbeats.halt(t)
			h.leave(jumper.owner)
			jl.rvn = jlast.lastRVN
			if err := jl.release(ctx, update); err != nil {
				t.Fatalf("Java release: %v", err)
			}
			takeTurns(t, e, h, "k", a, b, pa, pb)
		})
	}
}

// A Go holder dies (it never heartbeats) holding a row with a queue: a Java
// waiter, which reads the row, waits the leaseDuration on its own clock with
// the RVN unchanged and writes conditioned on that RVN, takes it over after
// the lease, when the dead holder's lock no longer counts as held. Its
// PutItem drops the queue (the Go waiter, cut off meanwhile so that the
// Java waiter is the one to take over, joins again); its UpdateItem keeps
// it. On the Java release the Go waiter gets the lock.
func TestDynamoDBJavaWaiterTakesOverADeadGoHolderWithAQueue(t *testing.T) {
	t.Parallel()
	for _, update := range []bool{false, true} {
		t.Run(map[bool]string{false: "PutItem", true: "UpdateItem"}[update], func(t *testing.T) {
			t.Parallel()
			e := newDDBEnv(t, ddbtest.TableSpec{})
			ctx := t.Context()
			h := &holders{t: t}
			dead := e.newTimedClient(lock.WithHeartbeatPeriod(0))
			l := mustAcquire(t, dead, "k")
			validUntil := l.ValidUntil()
			sent := dead.lastSent("UpdateItem", time.Now())
			h.enter(dead.Identity())
			h.died(dead.Identity(), sent, testLease)

			// The Java waiter watches from the start (so that its
			// takeover comes soon after the lease, and a holder valid
			// for too long would be seen); the Go waiter joins, which
			// does not change the RVN, and is cut off.
			java := newJavaClient(e, "java-waiter", update)
			jdone := java.acquireAsync(t, "k")
			eventually(t, patience, "the Java waiter reads the held row", func() bool { return java.reads.Load() > 0 })
			w := e.newClient()
			pw := acquireAsync(ctx, w, "k", lock.WithAdditionalWait(forever))
			e.waitQueue("k", w.Identity())
			heal := cutOff(w)

			other := javaHost{e: e, owner: "java-other", lease: javaQueueLease}
			if _, err := other.acquireNew(ctx, "k"); !conditionFailed(err) {
				t.Fatalf("Java acquire (new) of a held Go row with a queue = %v, want a conditional-check failure", err)
			}
			if _, err := other.acquireReleased(ctx, "k"); !conditionFailed(err) {
				t.Fatalf("Java acquire (released) of a held Go row with a queue = %v, want a conditional-check failure", err)
			}
			jl := awaitJava(t, e, jdone, "k")
			h.enter(java.owner)
			if jl.how != javaStale || jl.watched != l.RVN() || jl.waited != testLease {
				t.Fatalf("the Java client acquired (%s) watching RVN %q for %v; want a takeover of the Go holder's RVN %q after its lease %v",
					jl.how, jl.watched, jl.waited, l.RVN(), testLease)
			}
			if after := jl.sent.Sub(sent); after < testLease {
				t.Errorf("the Java takeover left %v after the Go holder's write, before its lease %v", after, testLease)
			}
			if validUntil.After(jl.sent) || l.IsHeld() {
				t.Errorf("the dead Go holder's lock was valid until %v after the Java takeover left (held now: %t)", validUntil.Sub(jl.sent), l.IsHeld())
			}
			it := e.wantHeldBy("Java takeover", "k", java.owner, jl.rvn)
			want := []string{w.Identity()}
			if !update {
				want = nil
			}
			if got := queueOwnersOf(it); !slices.Equal(got, want) {
				t.Fatalf("queue after the Java takeover %v, want %v", got, want)
			}
			if err := jl.heartbeat(ctx); err != nil {
				t.Fatalf("Java heartbeat: %v", err)
			}
			healed := time.Now()
			heal()
			// The Go waiter comes back: it queues behind the Java holder
			// (again, after the PutItem), and waits.
			waitSent(t, w, healed, 2)
			e.waitQueue("k", w.Identity())
			notReturned(t, pw, w.Identity(), "while the Java client holds the lock")
			if err := jl.heartbeat(ctx); err != nil {
				t.Fatalf("Java heartbeat: %v", err)
			}
			if got := e.queueOwners("k"); !slices.Equal(got, []string{w.Identity()}) {
				t.Fatalf("queue after a Java heartbeat %v, want [%s]", got, w.Identity())
			}
			h.leave(java.owner)
			if err := jl.release(ctx, false); err != nil {
				t.Fatalf("Java release: %v", err)
			}
			wl := await(t, e, pw, "k", w.Identity())
			h.enter(w.Identity())
			e.wantHeldBy("Go acquisition after the Java release", "k", w.Identity(), "")
			if q := e.queueOwners("k"); len(q) != 0 {
				t.Errorf("queue %v after the only waiter acquired", q)
			}
			h.leave(w.Identity())
			mustRelease(t, wl)
			// The dead holder's lock ended by its validity.
			eventually(t, patience, "the dead holder's lock ends", func() bool { return ended(l) })
			if lost := lostError(t, l.Err()); lost.Reason != dynalease.Expired {
				t.Errorf("the dead holder's lock ended with %v, want dynalease.Expired", lost)
			}
		})
	}
}

// A Go holder releases to the head of its queue, a Go waiter that never
// confirms (it is cut off: dead, to everybody else). A Java waiter that was
// watching the holder treats the handed row as held: it is not released
// (the Java acquisitions of a new or released lock are refused), its RVN
// is new, and its leaseDuration is the head's, which the Java waiter waits
// out on its own clock before taking the row over. The head, back, finds
// the Java client holding, queues behind it and gets the lock from the
// Java release. Never two holders.
func TestDynamoDBJavaWaiterTreatsAnUnconfirmedHandOverAsHeld(t *testing.T) {
	t.Parallel()
	for _, update := range []bool{false, true} {
		t.Run(map[bool]string{false: "PutItem", true: "UpdateItem"}[update], func(t *testing.T) {
			t.Parallel()
			e := newDDBEnv(t, ddbtest.TableSpec{})
			ctx := t.Context()
			h := &holders{t: t}
			// The head's lease differs from the holder's: the Java
			// waiter must wait the head's, from the handed row.
			const headLease = 2500 * time.Millisecond
			holder := e.newClient(lock.WithStint(-1)) // a hand-over at the release
			head := e.newTimedClient(lock.WithLeaseDuration(headLease))
			l := mustAcquire(t, holder, "k")
			h.enter(holder.Identity())
			ph := acquireAsync(ctx, head, "k", lock.WithAdditionalWait(forever))
			e.waitQueue("k", head.Identity())

			java := newJavaClient(e, "java-waiter", update)
			jdone := java.acquireAsync(t, "k")
			eventually(t, patience, "the Java waiter reads the held row", func() bool { return java.reads.Load() > 0 })

			heal := cutOff(head)
			handed := time.Now()
			held := l.RVN()
			h.leave(holder.Identity())
			mustRelease(t, l)
			it := e.item("k")
			rh := str(it, "recordVersionNumber")
			switch {
			case str(it, "ownerName") != head.Identity() || str(it, "dynaleaseHandoff") == "" || str(it, "isReleased") != "":
				t.Fatalf("after the release: owner %q, handoff %q, released %q; want handed to %s",
					str(it, "ownerName"), str(it, "dynaleaseHandoff"), str(it, "isReleased"), head.Identity())
			case str(it, "leaseDuration") != strconv.FormatInt(headLease.Milliseconds(), 10):
				t.Fatalf("the handed row's leaseDuration is %q, want the head's lease %v", str(it, "leaseDuration"), headLease)
			case rh == held || len(queueOwnersOf(it)) != 0:
				t.Fatalf("the handed row has RVN %q (the holder's was %q) and queue %v", rh, held, queueOwnersOf(it))
			}
			checkJavaReadable(t, "handed row", it, head.Identity(), headLease, false)
			other := javaHost{e: e, owner: "java-other", lease: javaQueueLease}
			if _, err := other.acquireNew(ctx, "k"); !conditionFailed(err) {
				t.Fatalf("Java acquire (new) of a handed row = %v, want a conditional-check failure", err)
			}
			if _, err := other.acquireReleased(ctx, "k"); !conditionFailed(err) {
				t.Fatalf("Java acquire (released) of a handed row = %v, want a conditional-check failure", err)
			}

			jl := awaitJava(t, e, jdone, "k")
			h.enter(java.owner)
			if jl.how != javaStale || jl.watched != rh || jl.waited != headLease {
				t.Fatalf("the Java client acquired (%s) watching RVN %q for %v; want a takeover of the handed RVN %q after the head's lease %v",
					jl.how, jl.watched, jl.waited, rh, headLease)
			}
			if after := jl.sent.Sub(handed); after < headLease {
				t.Errorf("the Java takeover left %v after the hand-over, before the head's lease %v", after, headLease)
			}
			it = e.wantHeldBy("Java takeover of the handed row", "k", java.owner, jl.rvn)
			// The PutItem drops the hand-over; the UpdateItem keeps it,
			// knowing nothing of it: it names a ticket while the row
			// names the Java holder, which hands nobody anything.
			if got := str(it, "dynaleaseHandoff"); (got != "") != update {
				t.Fatalf("handoff %q after the Java takeover", got)
			}
			notReturned(t, ph, head.Identity(), "while it was cut off")
			healed := time.Now()
			heal()
			waitSent(t, head, healed, 2)
			e.waitQueue("k", head.Identity())
			if err := jl.heartbeat(ctx); err != nil {
				t.Fatalf("Java heartbeat: %v", err)
			}
			notReturned(t, ph, head.Identity(), "while the Java client holds the lock")
			h.leave(java.owner)
			if err := jl.release(ctx, false); err != nil {
				t.Fatalf("Java release: %v", err)
			}
			hl := await(t, e, ph, "k", head.Identity())
			h.enter(head.Identity())
			if it := e.wantHeldBy("the head's acquisition", "k", head.Identity(), ""); str(it, "dynaleaseHandoff") != "" {
				t.Fatalf("a Go holder's row carries the hand-over %q", str(it, "dynaleaseHandoff"))
			}
			h.leave(head.Identity())
			mustRelease(t, hl)
		})
	}
}

// Go and Java waiters on a Go-held row, all asking again and again: two Go
// clients (fair, queued) and two Java clients (one acquiring with PutItem
// and releasing with the row kept, one with UpdateItem and deleting the row
// on every other release; the first goes silent once while holding, so
// that the others race to take it over after its lease). The Java clients
// may jump the queue (the test logs when they do; it happens in most runs,
// not all); at no time do two hold, by the in-process count and by the
// row, which names each holder from its acquisition to its release.
func TestDynamoDBJavaAndGoWaitersNeverHoldAtOnce(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const rounds = 6
	// The Go waiters read more slowly than the Java clients (javaPoll),
	// who then often take a lock released with the row kept first: they
	// jump the queue. Between rounds a Go client pauses up to goPause,
	// and so sometimes releases with nobody queued: the Java clients get
	// in then. (With short pauses the Go clients hand the lock to each
	// other until they are done.)
	const goPoll, goPause = 200 * time.Millisecond, 400 * time.Millisecond
	h := &holders{t: t}
	// Untimed Go clients: a lock must not run out because the machine
	// stalled; nobody here waits out a Go lease.
	g1, g2 := e.newClient(), e.newClient()
	j1, j2 := newJavaClient(e, "java-put", false), newJavaClient(e, "java-update", true)
	first := mustAcquire(t, g1, "k")
	h.enter(g1.Identity())

	pause := func(upTo time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rand.N(upTo)):
			return nil
		}
	}
	var jumps, javaTurns, goTurns atomic.Int32
	goLoop := func(c *ddbClient, l *lock.Lock) {
		for i := range rounds {
			if l == nil {
				var err error
				if l, err = c.Acquire(ctx, "k", lock.WithAdditionalWait(forever), lock.WithRefreshPeriodFor(goPoll)); err != nil {
					t.Errorf("%s round %d: Acquire: %v", c.Identity(), i, err)
					return
				}
				h.enter(c.Identity())
			}
			goTurns.Add(1)
			if _, err := e.heldBy(ctx, "k", c.Identity(), ""); err != nil {
				t.Errorf("%s round %d, acquired: %v", c.Identity(), i, err)
			}
			if pause(60*time.Millisecond) != nil {
				return
			}
			if _, err := e.heldBy(ctx, "k", c.Identity(), ""); err != nil || !l.IsHeld() {
				t.Errorf("%s round %d, before its release: %v (held: %t, %v)", c.Identity(), i, err, l.IsHeld(), l.Err())
			}
			h.leave(c.Identity())
			if err := l.Release(ctx); err != nil {
				t.Errorf("%s round %d: Release: %v", c.Identity(), i, err)
				return
			}
			l = nil
			if pause(goPause) != nil {
				return
			}
		}
	}
	javaLoop := func(j *javaClient, del func(round int) bool, dies int) {
		for i := range rounds {
			jl, err := j.acquire(ctx, "k")
			if err != nil {
				t.Errorf("%s round %d: acquire: %v", j.owner, i, err)
				return
			}
			h.enter(j.owner)
			javaTurns.Add(1)
			if len(jl.queue) > 0 {
				jumps.Add(1)
				t.Logf("%s (%s) jumped the queue %v", j.owner, jl.how, jl.queue)
			}
			if _, err := e.heldBy(ctx, "k", j.owner, jl.rvn); err != nil {
				t.Errorf("%s round %d, acquired: %v", j.owner, i, err)
			}
			if pause(150*time.Millisecond) != nil {
				return
			}
			if err := jl.heartbeat(ctx); err != nil {
				t.Errorf("%s round %d: heartbeat: %v", j.owner, i, err)
				return
			}
			if _, err := e.heldBy(ctx, "k", j.owner, jl.rvn); err != nil {
				t.Errorf("%s round %d, before its release: %v", j.owner, i, err)
			}
			if i == dies {
				// Silent from here on: the others may take the lock
				// over once its lease has passed since this heartbeat.
				t.Logf("%s goes silent holding the lock", j.owner)
				h.died(j.owner, jl.sent, j.lease)
				continue
			}
			h.leave(j.owner)
			if err := jl.release(ctx, del(i)); err != nil {
				t.Errorf("%s round %d: release: %v", j.owner, i, err)
				return
			}
			if pause(150*time.Millisecond) != nil {
				return
			}
		}
	}

	var wg sync.WaitGroup
	defer func() {
		// A failure below ends the rounds before the test returns.
		cancel()
		wg.Wait()
	}()
	wg.Go(func() { javaLoop(j1, func(int) bool { return false }, 2) })
	wg.Go(func() { javaLoop(j2, func(i int) bool { return i%2 == 0 }, -1) })
	eventually(t, patience, "both Java clients watch the row", func() bool { return j1.reads.Load() > 0 && j2.reads.Load() > 0 })
	wg.Go(func() { goLoop(g2, nil) })
	e.waitQueue("k", g2.Identity())
	wg.Go(func() { goLoop(g1, first) })
	wg.Wait()
	if err := ctx.Err(); err != nil {
		t.Fatalf("the rounds did not end: %v", err)
	}
	order := h.acquisitions()
	t.Logf("%d acquisitions, %d by Go clients, %d by Java clients, %d of them jumping the queue: %v", len(order), goTurns.Load(), javaTurns.Load(), jumps.Load(), order)
	if n := len(order); n != 4*rounds {
		t.Errorf("%d acquisitions, want %d", n, 4*rounds)
	}
}
