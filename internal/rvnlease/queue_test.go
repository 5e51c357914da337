package rvnlease

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/resourcelock"
)

// queueAhead stores a row held by "other" at rvn with n waiters ahead of
// this acquirer's entry (when it has joined) and m behind.
func (e *engine) queueAhead(rvn string, n, m int) {
	e.t.Helper()
	var q []rows.Waiter
	for i := range n {
		q = append(q, rows.Waiter{Ticket: fmt.Sprintf("a%d-%s", i, rvn), Identity: fmt.Sprintf("w%d", i), Lease: lease})
	}
	if e.acq.q != nil {
		q = append(q, e.acq.q.me)
	}
	for i := range m {
		q = append(q, rows.Waiter{Ticket: fmt.Sprintf("b%d", i), Identity: fmt.Sprintf("v%d", i), Lease: lease})
	}
	rows.MustRaw(e.mem).PutItem(rows.Item{Key: key, Queue: q, Record: resourcelock.Record{HolderIdentity: "other", RVN: rvn, LeaseDuration: lease}})
}

// A waiter behind the head reads at the pace it measured the queue move,
// the shortest time per place since the first move, two thirds of the
// time the places ahead but one take, never rarer than the lease; the
// head and a waiter whose pace is unknown read every period.
func TestAQueuedWaiterReadsAtThePaceOfTheQueue(t *testing.T) {
	e := newEngine(t)
	e.acq.Queue(lease, period)
	e.put("other", "r0", false)
	e.round()
	e.wantOps(faulty.OpCreate, faulty.OpJoin) // the Create's refusal carries the row
	e.queueAhead("r0", 30, 0)
	if got := e.wait(); got > period*6/5 {
		t.Fatalf("wait before any move: %v, want a period", got)
	}
	// The queue moves: 2 places in 400 ms (the first move, which includes
	// a hold under way, is not measured), then 3 in 300 ms, then 2 in
	// 600 ms: the pace is the shortest, 100 ms per place.
	for _, step := range []struct {
		after time.Duration
		ahead int
	}{{time.Second, 28}, {400 * time.Millisecond, 26}, {300 * time.Millisecond, 23}, {600 * time.Millisecond, 21}} {
		e.fc.Step(step.after)
		e.queueAhead(fmt.Sprintf("r-%d", step.ahead), step.ahead, 0)
		e.round()
	}
	if got := e.acq.Position(); got != 21 {
		t.Fatalf("place %d, want 21", got)
	}
	want := 100 * time.Millisecond * 20 * 2 / 3
	if got := e.wait(); got < want || got > want*6/5 {
		t.Fatalf("wait at place 21: %v, want about %v", got, want)
	}
	// Far back, never rarer than the watched lease (the RVN's expiry
	// comes first here anyway for the first two only).
	e.fc.Step(time.Millisecond)
	e.queueAhead("r-far", 21, 0) // same place: no new measurement
	e.round()
	e.acq.q.pace = time.Hour
	if got := e.wait(); got > lease*6/5 {
		t.Fatalf("wait with a very slow pace: %v, want at most the lease %v", got, lease)
	}
	// At the head: every period.
	e.queueAhead("r-head", 0, 5)
	e.round()
	if got := e.wait(); got > period*6/5 {
		t.Fatalf("wait at the head: %v, want a period", got)
	}
}

// The queue's head reads every period until it has been the head for the
// holders' stint less one and a half periods, when the hand-over to it is
// due; then a quarter period, for three periods at most, or until it stops
// being the head. With no stint, every period.
func TestTheHeadReadsFasterWhenTheHandOverIsDue(t *testing.T) {
	const stint = 4 * period
	e := newEngine(t)
	e.acq.Stint = stint
	e.acq.Queue(lease, period)
	e.put("other", "r0", false)
	e.round()
	e.queueAhead("r1", 1, 0)
	e.round()
	e.fc.Step(period)
	e.queueAhead("r2", 0, 0) // the head from here on
	e.round()
	became := e.fc.Now()
	for e.fc.Now().Sub(became) < stint-period*3/2 {
		if got := e.wait(); got < period || got > period*6/5 {
			t.Fatalf("wait %v into the headship: %v, want a period", e.fc.Now().Sub(became), got)
		}
		e.fc.Step(period / 2)
		e.queueAhead(fmt.Sprintf("r-%v", e.fc.Now()), 0, 0) // the holder takes it back, again and again
		e.round()
	}
	for e.fc.Now().Sub(became) <= stint+period*3/2 {
		if got := e.wait(); got < period/4 || got > period/4*6/5 {
			t.Fatalf("wait %v into the headship, the hand-over due: %v, want a quarter period", e.fc.Now().Sub(became), got)
		}
		e.fc.Step(period / 4)
		e.queueAhead(fmt.Sprintf("r-%v", e.fc.Now()), 0, 0)
		e.round()
	}
	if got := e.wait(); got < period {
		t.Fatalf("wait %v into the headship, the hand-over overdue: %v, want a period", e.fc.Now().Sub(became), got)
	}
	e.queueAhead("r-back", 1, 0) // behind another again (it joined anew, say)
	e.round()
	if got := e.wait(); got < period {
		t.Fatalf("wait behind the head: %v, want at least a period", got)
	}
	// Without a stint, the head reads every period however long it waits.
	e = newEngine(t)
	e.acq.Queue(lease, period)
	e.put("other", "r0", false)
	e.round()
	e.queueAhead("r1", 0, 0)
	e.round()
	e.fc.Step(time.Minute)
	e.queueAhead("r2", 0, 0)
	e.round()
	if got := e.wait(); got < period {
		t.Fatalf("wait of a head without a stint: %v, want a period", got)
	}
}

func TestHandOverSkipsTheReleasersOwnEntries(t *testing.T) {
	w := func(id string) rows.Waiter {
		return rows.Waiter{Ticket: "t-" + id, Identity: id, Lease: lease}
	}
	for _, tc := range []struct {
		queue   []rows.Waiter
		tickets []string
		head    string
		all     bool
	}{
		{nil, nil, "", true},
		{[]rows.Waiter{w("me")}, []string{"t-me"}, "", true},
		{[]rows.Waiter{w("a"), w("me")}, []string{"t-a"}, "a", false},
		{[]rows.Waiter{w("me"), w("me"), w("b"), w("c")}, []string{"t-me", "t-me", "t-b"}, "b", false},
	} {
		d, head := HandOver(rows.Item{Queue: tc.queue}, "me", nil)
		got := ""
		if head != nil {
			got = head.Identity
		}
		if got != tc.head || d.All != tc.all || fmt.Sprint(d.Tickets) != fmt.Sprint(tc.tickets) {
			t.Errorf("HandOver(%v) = %+v, %q; want tickets %v all %t, head %q", tc.queue, d, got, tc.tickets, tc.all, tc.head)
		}
	}
}

// A release whose queue keeps moving under it ends, on its last write,
// with a plain release that ignores the queue, rather than leave the row
// to run out.
func TestAReleaseWhoseQueueKeepsMovingReleasesPlainly(t *testing.T) {
	e := newEngine(t)
	res := e.round()
	e.fs.OnCall(func(op faulty.Op) {
		if op == faulty.OpUpdate {
			_, _ = rows.MustOpen(e.mem).Join(context.Background(), key, rows.Waiter{Ticket: e.record(false).RVN, Identity: "me", Lease: lease})
		}
	})
	next := func(cur rows.Item) resourcelock.Record { return e.record(true) }
	w := e.hld.ReleaseQueued(context.Background(), res.Item, next, false)
	if !w.Landed {
		t.Fatalf("ReleaseQueued = %+v, want landed", w)
	}
	if n := e.fs.Count(faulty.OpUpdate); n != maxRewrites {
		t.Fatalf("%d writes, want %d", n, maxRewrites)
	}
	if it, _ := rows.MustRaw(e.mem).Item(key); !it.Released || it.HandedTo != "" {
		t.Fatalf("row %+v, want released", it.Record)
	}
}

// The queue's head behind readers (a row held by rows.ReadersHolder)
// reads a quarter period for its first two periods there, since the last
// reader leaves when its hold ends, which no row tells; a period after
// that, and a period behind a holder that is not readers.
func TestTheHeadBehindReadersReadsOftenForTwoPeriods(t *testing.T) {
	e := newEngine(t)
	e.acq.Queue(lease, period)
	e.put("other", "r0", false)
	e.round()
	readers := func(rvn string) {
		rows.MustRaw(e.mem).PutItem(rows.Item{Key: key, Queue: []rows.Waiter{e.acq.q.me},
			Record:  resourcelock.Record{HolderIdentity: rows.ReadersHolder, RVN: rvn, LeaseDuration: lease},
			Readers: []rows.Reader{{Ticket: "t", Identity: "reader", Lease: lease, RVN: rvn}}})
	}
	readers("r1")
	e.round()
	became := e.fc.Now()
	for e.fc.Now().Sub(became) < 2*period {
		if got := e.wait(); got < period/4 || got > period/4*6/5 {
			t.Fatalf("wait %v behind readers: %v, want a quarter period", e.fc.Now().Sub(became), got)
		}
		e.fc.Step(period / 4)
		readers(fmt.Sprintf("r-%v", e.fc.Now())) // they renew
		e.round()
	}
	if got := e.wait(); got < period {
		t.Fatalf("wait %v behind readers: %v, want a period", e.fc.Now().Sub(became), got)
	}
	e.queueAhead("w", 0, 0) // a writer holds: no stint, a period
	e.round()
	if got := e.wait(); got < period {
		t.Fatalf("wait at the head behind a writer: %v, want a period", got)
	}
}
