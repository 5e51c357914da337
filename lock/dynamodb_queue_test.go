package lock_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
)

// queueOwners returns the owner names in the queue of the row at key.
func (e *ddbEnv) queueOwners(key string) []string {
	return queueOwnersOf(e.item(key))
}

// queueOwnersOf returns the owner names in the queue of a row.
func queueOwnersOf(item map[string]types.AttributeValue) []string {
	var owners []string
	if l, ok := item["dynaleaseQueue"].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if m, ok := v.(*types.AttributeValueMemberM); ok {
				owners = append(owners, str(m.Value, "o"))
			}
		}
	}
	return owners
}

// waitQueue waits until the row's queue lists want, in order.
func (e *ddbEnv) waitQueue(key string, want ...string) {
	e.t.Helper()
	deadline := time.Now().Add(patience)
	for !slices.Equal(e.queueOwners(key), want) {
		if time.Now().After(deadline) {
			e.t.Fatalf("queue %v, want %v", e.queueOwners(key), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Against DynamoDB Local: waiters get the lock in the order they joined
// the queue, and a client that releases and asks again, without a stint,
// queues behind them. Each step waits for the state it needs (a join
// visible in the row), so the order is the queue's, whatever the machine's
// speed.
func TestDynamoDBWaitersGetTheLockInTheOrderTheyQueued(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx := t.Context()
	cs := []*ddbClient{e.newClient(lock.WithStint(-1)), e.newClient(lock.WithStint(-1)), e.newClient(lock.WithStint(-1)), e.newClient(lock.WithStint(-1))}
	l := mustAcquire(t, cs[0], "k")
	var pending []<-chan acquired
	var want []string
	for _, c := range cs[1:] {
		pending = append(pending, acquireAsync(ctx, c, "k", lock.WithAdditionalWait(time.Hour)))
		want = append(want, c.Identity())
		e.waitQueue("k", want...)
	}
	// The holder releases and asks again: it hands the lock to the first
	// waiter and joins behind the last.
	mustRelease(t, l)
	pending = append(pending, acquireAsync(ctx, cs[0], "k", lock.WithAdditionalWait(time.Hour)))
	order := []*ddbClient{cs[1], cs[2], cs[3], cs[0]}
	for i, ch := range pending {
		select {
		case a := <-ch:
			if a.err != nil {
				t.Fatalf("Acquire by %s: %v", order[i].Identity(), a.err)
			}
			if got := str(e.item("k"), "ownerName"); got != order[i].Identity() {
				t.Fatalf("acquisition %d: the row names %s, want %s", i, got, order[i].Identity())
			}
			if str(e.item("k"), "dynaleaseHandoff") != "" {
				t.Fatalf("acquisition %d: the row still carries the hand-over", i)
			}
			if i == 0 {
				e.waitQueue("k", cs[2].Identity(), cs[3].Identity(), cs[0].Identity())
			}
			mustRelease(t, a.l)
		case <-time.After(patience):
			t.Fatalf("acquisition %d (%s) never came; queue %v", i, order[i].Identity(), e.queueOwners("k"))
		}
		// The next in line must not be overtaken: nobody else acquires
		// before it (checked by the row's owner at each acquisition).
	}
	if item := e.item("k"); str(item, "isReleased") != "1" || len(e.queueOwners("k")) != 0 {
		t.Fatalf("after the last release: released %q, queue %v", str(item, "isReleased"), e.queueOwners("k"))
	}
}

// Against DynamoDB Local: waiters for a set get it in the order they
// joined the queue of its first key, a waiter for that key alone among
// them, and a client that releases the set and asks again queues behind
// them; a release hands the first key over and frees the others.
func TestDynamoDBSetWaitersGetTheSetInTheOrderTheyQueued(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx := t.Context()
	keys := []string{"s-a", "s-b", "s-c"}
	cs := []*ddbClient{e.newClient(lock.WithStint(-1)), e.newClient(lock.WithStint(-1)), e.newClient(lock.WithStint(-1)), e.newClient(lock.WithStint(-1))}
	held, err := cs[0].AcquireSet(ctx, keys)
	if err != nil {
		t.Fatalf("AcquireSet: %v", err)
	}
	var pending []<-chan acquired
	var want []string
	for i, c := range cs[1:] {
		if i == 1 {
			// The second waiter wants the first key alone.
			pending = append(pending, acquireAsync(ctx, c, "s-a", lock.WithAdditionalWait(time.Hour)))
		} else {
			pending = append(pending, acquireSetAsync(ctx, c, keys, lock.WithAdditionalWait(time.Hour)))
		}
		want = append(want, c.Identity())
		e.waitQueue("s-a", want...)
	}
	mustRelease(t, held)
	if owner := str(e.item("s-a"), "ownerName"); owner != cs[1].Identity() {
		t.Fatalf("after the release the first key names %s, want the queue's head %s", owner, cs[1].Identity())
	}
	pending = append(pending, acquireSetAsync(ctx, cs[0], keys, lock.WithAdditionalWait(time.Hour)))
	order := []*ddbClient{cs[1], cs[2], cs[3], cs[0]}
	for i, ch := range pending {
		select {
		case a := <-ch:
			if a.err != nil {
				t.Fatalf("acquisition %d by %s: %v", i, order[i].Identity(), a.err)
			}
			if got := str(e.item("s-a"), "ownerName"); got != order[i].Identity() {
				t.Fatalf("acquisition %d: the first key names %s, want %s", i, got, order[i].Identity())
			}
			if i == 0 {
				e.waitQueue("s-a", cs[2].Identity(), cs[3].Identity(), cs[0].Identity())
			}
			mustRelease(t, a.l)
		case <-time.After(patience):
			t.Fatalf("acquisition %d (%s) never came; queue %v", i, order[i].Identity(), e.queueOwners("s-a"))
		}
	}
	for _, k := range keys {
		if item := e.item(k); str(item, "isReleased") != "1" || len(queueOwnersOf(item)) != 0 {
			t.Fatalf("%s after the last release: released %q, queue %v", k, str(item, "isReleased"), queueOwnersOf(item))
		}
	}
}

func acquireSetAsync(ctx context.Context, c *ddbClient, keys []string, opts ...lock.AcquireOption) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := c.AcquireSet(ctx, keys, opts...)
		ch <- acquired{l, err, time.Now()}
	}()
	return ch
}

// rawJoin appends a queue entry to the row of key with a raw UpdateItem,
// as a waiter that then stopped reading would have: it never takes the
// lock, and nothing races the test.
func (e *ddbEnv) rawJoin(key, ticket, identity string) {
	e.t.Helper()
	entry := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"t": &types.AttributeValueMemberS{Value: ticket}, "o": &types.AttributeValueMemberS{Value: identity},
		"l": &types.AttributeValueMemberN{Value: "60000"},
	}}
	_, err := e.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table), Key: e.rawKey(key, ""),
		UpdateExpression:          aws.String("SET #q = list_append(if_not_exists(#q, :empty), :entry)"),
		ExpressionAttributeNames:  map[string]string{"#q": "dynaleaseQueue"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":empty": &types.AttributeValueMemberL{}, ":entry": &types.AttributeValueMemberL{Value: []types.AttributeValue{entry}}},
	})
	if err != nil {
		e.t.Fatalf("raw join: %v", err)
	}
}

// rawLeaveHead removes the first queue entry of the row of key.
func (e *ddbEnv) rawLeaveHead(key string) {
	e.t.Helper()
	_, err := e.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table), Key: e.rawKey(key, ""),
		UpdateExpression: aws.String("REMOVE #q[0]"), ExpressionAttributeNames: map[string]string{"#q": "dynaleaseQueue"},
	})
	if err != nil {
		e.t.Fatalf("raw leave: %v", err)
	}
}

// Against DynamoDB Local: within its stint, a holder that releases with a
// waiter queued keeps the row (marked released, the queue in it) and takes
// it back with one write. The waiter here is a raw entry that never
// reads, so that nothing races the take-back. Then a real waiter, once at
// the queue's head, takes a kept row whose holder does not come back, and
// a newcomer, whose create the kept row refuses, queues and follows it.
func TestDynamoDBAStintKeepsTheLockForItsHolderUntilTheHeadTakesIt(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx := t.Context()
	// The stint outlasts the test, and the holder sends no heartbeat of
	// its own (its lease is a minute): the requests counted below are the
	// releases' and take-backs' alone, however slow the machine.
	holder := e.newClient(lock.WithStint(time.Hour), lock.WithHeartbeatPeriod(0))
	head, newcomer := e.newClient(), e.newClient()
	l := mustAcquire(t, holder, "k")
	e.rawJoin("k", "ticket-silent", "silent")
	holder.ft.Reset()
	for i := range 3 {
		mustRelease(t, l)
		it := e.item("k")
		if str(it, "isReleased") != "1" || str(it, "ownerName") != holder.Identity() || !slices.Equal(queueOwnersOf(it), []string{"silent"}) {
			t.Fatalf("release %d: owner %q, released %q, queue %v; want kept for the stint", i, str(it, "ownerName"), str(it, "isReleased"), queueOwnersOf(it))
		}
		// The first release expected no waiter (its lock's row showed
		// none): refused, it is written again over the row its refusal
		// carries. Later ones know the queue from the taking back.
		holder.wantCounts(t, fmt.Sprintf("release %d", i), map[string]int{"UpdateItem": 2 - min(i, 1)})
		l = mustAcquire(t, holder, "k")
		holder.wantCounts(t, fmt.Sprintf("taking back %d", i), map[string]int{"UpdateItem": 1})
		if got := str(e.item("k"), "ownerName"); got != holder.Identity() {
			t.Fatalf("taken back %d: the row names %s", i, got)
		}
	}
	ph := acquireAsync(ctx, head, "k", lock.WithAdditionalWait(forever))
	e.waitQueue("k", "silent", head.Identity())
	mustRelease(t, l)   // kept; the holder does not come back
	e.rawLeaveHead("k") // the silent waiter leaves: head heads the queue
	pn := acquireAsync(ctx, newcomer, "k", lock.WithAdditionalWait(forever))
	for _, want := range []struct {
		c  *ddbClient
		ch <-chan acquired
	}{{head, ph}, {newcomer, pn}} {
		select {
		case a := <-want.ch:
			if a.err != nil {
				t.Fatalf("Acquire by %s: %v", want.c.Identity(), a.err)
			}
			if got := str(e.item("k"), "ownerName"); got != want.c.Identity() {
				t.Fatalf("the row names %s, want %s", got, want.c.Identity())
			}
			if want.c == head {
				e.waitQueue("k", newcomer.Identity())
			}
			mustRelease(t, a.l)
		case <-time.After(patience):
			t.Fatalf("%s never acquired; queue %v", want.c.Identity(), e.queueOwners("k"))
		}
	}
}
