package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// The readers of a row: a map (M) from each reader's ticket to its entry, a
// map with the reader's owner name, lease in milliseconds and the entry's
// RVN. A ticket is a map key, so a renewal or a leave names its entry by
// path without knowing its place, and readers never conflict on it.
const (
	readerIdentity = "o" // S
	readerLease    = "l" // N, milliseconds
	readerRVN      = "r" // S
)

// encodeReader returns r as an entry of the readers map.
func encodeReader(r rows.Reader) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		readerIdentity: s(r.Identity),
		readerLease:    &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Lease.Milliseconds(), 10)},
		readerRVN:      s(r.RVN),
	}}
}

// decodeReaders reads the readers attribute of a row held by readers, in
// ticket order; any other row has none (an older client's write may leave
// entries behind, which mean nothing once the row is not the readers').
func decodeReaders(item map[string]types.AttributeValue, held bool) ([]rows.Reader, error) {
	v, ok := item[attrReaders]
	if !ok || !held {
		return nil, nil
	}
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return nil, wrongType(attrReaders, "M", v)
	}
	if len(m.Value) == 0 {
		return nil, nil
	}
	readers := make([]rows.Reader, 0, len(m.Value))
	for ticket, e := range m.Value {
		em, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return nil, wrongType(attrReaders+"."+ticket, "M", e)
		}
		o, _ := em.Value[readerIdentity].(*types.AttributeValueMemberS)
		n, _ := em.Value[readerLease].(*types.AttributeValueMemberN)
		r, _ := em.Value[readerRVN].(*types.AttributeValueMemberS)
		if o == nil || n == nil || r == nil {
			return nil, fmt.Errorf("%w: invalid record: %s.%s lacks an owner, lease or RVN", resourcelock.ErrPermanent, attrReaders, ticket)
		}
		ms, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || ms <= 0 || ms > record.MaxLeaseDuration.Milliseconds() {
			return nil, fmt.Errorf("%w: invalid record: %s.%s lease %q is not a positive number of milliseconds", resourcelock.ErrPermanent, attrReaders, ticket, n.Value)
		}
		readers = append(readers, rows.Reader{Ticket: ticket, Identity: o.Value, Lease: time.Duration(ms) * time.Millisecond, RVN: r.Value})
	}
	sort.Slice(readers, func(i, j int) bool { return readers[i].Ticket < readers[j].Ticket })
	return readers, nil
}

// leaseValue returns a lease as the leaseDuration attribute keeps it.
func leaseValue(d time.Duration) types.AttributeValue {
	return s(strconv.FormatInt(d.Milliseconds(), 10))
}

// Share writes one change of the row's readers with one UpdateItem.
func (d *rowStore) Share(ctx context.Context, key resourcelock.Key, w rows.Share) (rows.Item, error) {
	if err := d.keys.checkKey(key); err != nil {
		return rows.Item{}, err
	}
	w, err := record.PrepareShare(w)
	if err != nil {
		return rows.Item{}, err
	}
	if !w.Expires.IsZero() && d.keys.ttl == "" {
		return rows.Item{}, fmt.Errorf("%w: a TTL was given but the store has no TTL attribute", dynalease.ErrInvalid)
	}
	e := newExpression()
	update, cond := d.shareExpressions(e, w)
	it, err := d.update(ctx, key, "share", e, update, cond)
	if _, found := rows.CurrentItem(err); errors.Is(err, resourcelock.ErrConflict) && !found && w.Op != rows.ShareBegin {
		// A failed condition answers with the row when there is one.
		return it, fmt.Errorf("%s: share: %w", d.describeKey(key), resourcelock.ErrNotFound)
	}
	return it, err
}

// shareExpressions returns the update and condition expressions of w.
func (d *Store) shareExpressions(e *expression, w rows.Share) (update, cond string) {
	x := &shareExpr{d: d, e: e, w: w, readers: e.name(attrReaders)}
	u := &x.u
	u.set(e, attrRVN, s(w.RVN))
	u.time(e, attrRenewTime, w.Time)
	switch {
	case d.keys.ttl == "":
	case w.Expires.IsZero():
		u.remove(e, d.keys.ttl)
	default:
		u.set(e, d.keys.ttl, &types.AttributeValueMemberN{Value: strconv.FormatInt(w.Expires.Unix(), 10)})
	}
	switch {
	case w.Op == rows.ShareBegin || w.Op == rows.ShareTake || (w.Upgradeable && w.Op == rows.ShareJoin):
		u.optional(e, attrUpgrader, upgrader(w))
	case w.Op == rows.ShareEnd || (w.Upgradeable && w.Op == rows.ShareLeave):
		u.remove(e, attrUpgrader)
	}
	cond = x.op() + x.drops()
	if w.Op == rows.ShareBegin || w.Op == rows.ShareTake {
		// A new hold of readers counts an acquisition: their token is
		// above every earlier writer's.
		return u.expression(e.name(attrTransitions) + " " + e.value(&types.AttributeValueMemberN{Value: "1"})), cond
	}
	return u.expression(""), cond
}

// shareExpr is the expressions of one Share under construction.
type shareExpr struct {
	d       *Store
	e       *expression
	u       updateClauses
	w       rows.Share
	readers string // the readers' map attribute, named
}

// entry is the path of the writing reader's entry.
func (x *shareExpr) entry() string { return x.readers + "." + x.e.name(x.w.Reader.Ticket) }

// held is the condition that readers hold the row.
func (x *shareExpr) held() string {
	e := x.e
	return e.name(attrOwner) + " = " + e.value(s(rows.ReadersHolder)) +
		" AND NOT " + e.name(attrReleased) + " = " + e.value(s(releasedValue))
}

// own is the condition that the writing reader's entry is as it last
// wrote it (and, with SeenLease, the row's lease as seen).
func (x *shareExpr) own() string {
	e, w := x.e, x.w
	c := x.held() + " AND " + x.entry() + "." + e.name(readerRVN) + " = " + e.value(s(w.Expect))
	if w.SeenLease > 0 {
		c += " AND " + e.name(attrLease) + " = " + e.value(leaseValue(w.SeenLease))
	}
	return c
}

// count is n as an expression value.
func (x *shareExpr) count(n int) string {
	return x.e.value(&types.AttributeValueMemberN{Value: strconv.Itoa(n)})
}

// op adds the clauses of w's change of the readers and returns its
// condition.
func (x *shareExpr) op() string {
	e, w, u := x.e, x.w, &x.u
	switch w.Op {
	case rows.ShareBegin, rows.ShareTake:
		u.set(e, attrOwner, s(rows.ReadersHolder))
		u.set(e, attrAcquisition, s(w.RVN))
		u.set(e, attrLease, leaseValue(w.Reader.Lease))
		u.time(e, attrAcquireTime, w.Time)
		u.set(e, attrReaders, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{w.Reader.Ticket: encodeReader(w.Reader)}})
		u.remove(e, attrReleased)
		u.remove(e, attrHandedTo)
		if w.Op == rows.ShareBegin {
			return x.d.keys.createCondition(e)
		}
		cond := "attribute_exists(" + e.name(x.d.keys.partitionKey) + ") AND " + e.name(attrRVN) + " = " + e.value(s(w.Expect))
		dequeueRemoves(u, e, &rows.Dequeue{Tickets: w.Dequeue})
		return withDequeue(e, cond, &rows.Dequeue{Tickets: w.Dequeue})
	case rows.ShareJoin:
		u.setPath(x.entry(), e.value(encodeReader(w.Reader)))
		u.set(e, attrLease, leaseValue(max(w.SeenLease, w.Reader.Lease)))
		return x.held() + " AND " + e.name(attrLease) + " = " + e.value(leaseValue(w.SeenLease)) +
			" AND " + joinQueueCondition(e, u, w) +
			" AND size(" + x.readers + ") < " + x.count(rows.MaxReaders)
	case rows.ShareRenew:
		u.setPath(x.entry()+"."+e.name(readerRVN), e.value(s(w.Reader.RVN)))
		return x.own()
	case rows.ShareLeave:
		u.removePath(x.entry())
		return x.own() + " AND size(" + x.readers + ") > " + x.count(1+len(w.Drop))
	case rows.ShareEnd:
		u.remove(e, attrReaders)
		u.set(e, attrReleased, s(releasedValue))
		return x.own() + " AND size(" + x.readers + ") = " + x.count(1+len(w.Drop))
	}
	return ""
}

// drops adds the clauses that take w's silent readers (and the upgrader
// mark) out, and returns the conditions on them and on the mark.
func (x *shareExpr) drops() string {
	e, w, u := x.e, x.w, &x.u
	mark := e.name(attrUpgrader)
	var cond string
	for _, d := range w.Drop {
		path := x.readers + "." + e.name(d.Ticket)
		cond += " AND " + path + "." + e.name(readerRVN) + " = " + e.value(s(d.RVN))
		if w.Op != rows.ShareEnd { // an End removes the whole map
			u.removePath(path)
		}
	}
	if w.DropsUpgrader {
		cond += " AND " + mark + " = " + e.value(s(w.Drop[0].Ticket))
		if w.Op != rows.ShareEnd {
			u.remove(e, attrUpgrader)
		}
	}
	switch {
	case !w.Upgradeable:
	case w.Op == rows.ShareJoin:
		cond += " AND attribute_not_exists(" + mark + ")"
	case w.Op == rows.ShareLeave || w.Op == rows.ShareEnd:
		cond += " AND " + mark + " = " + e.value(s(w.Reader.Ticket))
	}
	return cond
}

// joinQueueCondition returns a join's condition on the queue (see
// rows.Share.Ahead): its first Ahead entries readers', then the
// joining reader's own entry, which u removes, or nothing else.
func joinQueueCondition(e *expression, u *updateClauses, w rows.Share) string {
	q := e.name(attrQueue)
	entry := func(i int) string { return q + "[" + strconv.Itoa(i) + "]" }
	var conds []string
	if w.Ahead > 0 {
		yes := e.value(&types.AttributeValueMemberBOOL{Value: true})
		for i := range w.Ahead {
			conds = append(conds, entry(i)+"."+e.name(queueShared)+" = "+yes)
		}
	}
	switch {
	case w.Waiter != "":
		conds = append(conds, entry(w.Ahead)+"."+e.name(queueTicket)+" = "+e.value(s(w.Waiter)))
		u.removePath(entry(w.Ahead))
	case w.Ahead == 0:
		conds = append(conds, "(attribute_not_exists("+q+") OR size("+q+") = "+e.value(&types.AttributeValueMemberN{Value: "0"})+")")
	default:
		conds = append(conds, "size("+q+") = "+e.value(&types.AttributeValueMemberN{Value: strconv.Itoa(w.Ahead)}))
	}
	if len(conds) == 1 {
		return conds[0]
	}
	return "(" + strings.Join(conds, " AND ") + ")"
}

// upgrader returns the upgradeable reader's ticket a change writes, ""
// for none.
func upgrader(w rows.Share) string {
	if w.Upgradeable {
		return w.Reader.Ticket
	}
	return ""
}
