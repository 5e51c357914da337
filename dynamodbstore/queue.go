package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// The queue of a row: a list (L) of maps (M), oldest first, each with the
// waiter's ticket, owner name and lease in milliseconds, and a reader's
// mark.
const (
	queueTicket   = "t" // S
	queueIdentity = "o" // S
	queueLease    = "l" // N, milliseconds
	queueShared   = "s" // BOOL, true for a reader's wait; absent for a writer's
)

// encodeWaiter returns w as a queue entry.
func encodeWaiter(w rows.Waiter) types.AttributeValue {
	ms := (w.Lease + time.Millisecond - 1) / time.Millisecond
	m := map[string]types.AttributeValue{
		queueTicket:   s(w.Ticket),
		queueIdentity: s(w.Identity),
		queueLease:    &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(ms), 10)},
	}
	if w.Shared {
		m[queueShared] = &types.AttributeValueMemberBOOL{Value: true}
	}
	return &types.AttributeValueMemberM{Value: m}
}

// decodeQueue reads the queue attribute; a row without one has none. An
// entry that is not one this package writes makes the row invalid: the
// queue's conditions count entries by index.
func decodeQueue(item map[string]types.AttributeValue) ([]rows.Waiter, error) {
	v, ok := item[attrQueue]
	if !ok {
		return nil, nil
	}
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return nil, wrongType(attrQueue, "L", v)
	}
	if len(l.Value) == 0 {
		return nil, nil
	}
	q := make([]rows.Waiter, 0, len(l.Value))
	for i, e := range l.Value {
		m, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return nil, wrongType(fmt.Sprintf("%s[%d]", attrQueue, i), "M", e)
		}
		t, _ := m.Value[queueTicket].(*types.AttributeValueMemberS)
		o, _ := m.Value[queueIdentity].(*types.AttributeValueMemberS)
		n, _ := m.Value[queueLease].(*types.AttributeValueMemberN)
		if t == nil || o == nil || n == nil {
			return nil, fmt.Errorf("%w: invalid record: %s[%d] lacks a ticket, owner or lease", resourcelock.ErrPermanent, attrQueue, i)
		}
		ms, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || ms <= 0 || ms > record.MaxLeaseDuration.Milliseconds() {
			return nil, fmt.Errorf("%w: invalid record: %s[%d] lease %q is not a positive number of milliseconds", resourcelock.ErrPermanent, attrQueue, i, n.Value)
		}
		shared, _ := m.Value[queueShared].(*types.AttributeValueMemberBOOL)
		q = append(q, rows.Waiter{Ticket: t.Value, Identity: o.Value, Lease: time.Duration(ms) * time.Millisecond,
			Shared: shared != nil && shared.Value})
	}
	return q, nil
}

// withDequeue returns cond with the condition d puts on the queue.
func withDequeue(e *expression, cond string, d *rows.Dequeue) string {
	if d == nil {
		return cond
	}
	q := e.name(attrQueue)
	conds := []string{"(" + cond + ")"}
	for i, t := range d.Tickets {
		conds = append(conds, q+"["+strconv.Itoa(i)+"]."+e.name(queueTicket)+" = "+e.value(s(t)))
	}
	if d.All {
		n := &types.AttributeValueMemberN{Value: strconv.Itoa(len(d.Tickets))}
		if len(d.Tickets) == 0 {
			conds = append(conds, "(attribute_not_exists("+q+") OR size("+q+") = "+e.value(n)+")")
		} else {
			conds = append(conds, "size("+q+") = "+e.value(n))
		}
	}
	return strings.Join(conds, " AND ")
}

// dequeueRemoves adds the REMOVE clauses that take d's tickets out of
// the queue to u.
func dequeueRemoves(u *updateClauses, e *expression, d *rows.Dequeue) {
	if d == nil {
		return
	}
	for i := range d.Tickets {
		u.removePath(e.name(attrQueue) + "[" + strconv.Itoa(i) + "]")
	}
}

// Join appends w to the row's queue with one UpdateItem.
func (d *rowStore) Join(ctx context.Context, key resourcelock.Key, w rows.Waiter) (rows.Item, error) {
	if err := d.keys.checkKey(key); err != nil {
		return rows.Item{}, err
	}
	if err := record.CheckWaiter(w); err != nil {
		return rows.Item{}, err
	}
	e := newExpression()
	q := e.name(attrQueue)
	update := "SET " + q + " = list_append(if_not_exists(" + q + ", " + e.value(&types.AttributeValueMemberL{Value: []types.AttributeValue{}}) + "), " +
		e.value(&types.AttributeValueMemberL{Value: []types.AttributeValue{encodeWaiter(w)}}) + ")"
	// Not free (rows.Item.Free): held, or released with waiters
	// queued, whose queue a newcomer joins.
	cond := "attribute_exists(" + e.name(d.keys.partitionKey) + ") AND NOT (" + freeCondition(e) + ")" +
		" AND (attribute_not_exists(" + q + ") OR size(" + q + ") < " + e.value(&types.AttributeValueMemberN{Value: strconv.Itoa(record.MaxQueueLength)}) + ")"
	it, err := d.update(ctx, key, "join", e, update, cond)
	if _, found := rows.CurrentItem(err); errors.Is(err, resourcelock.ErrConflict) && !found {
		// A failed condition answers with the row when there is one.
		return it, fmt.Errorf("%s: join: %w", d.describeKey(key), resourcelock.ErrNotFound)
	}
	return it, err
}

// Leave removes the queue entry at index, when it carries ticket, with one
// UpdateItem.
func (d *rowStore) Leave(ctx context.Context, key resourcelock.Key, ticket string, index int) (rows.Item, error) {
	if err := d.keys.checkKey(key); err != nil {
		return rows.Item{}, err
	}
	if err := record.CheckLeave(ticket, index); err != nil {
		return rows.Item{}, err
	}
	e := newExpression()
	entry := e.name(attrQueue) + "[" + strconv.Itoa(index) + "]"
	cond := entry + "." + e.name(queueTicket) + " = " + e.value(s(ticket))
	return d.update(ctx, key, "leave", e, "REMOVE "+entry, cond)
}
