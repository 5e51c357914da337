package rowstest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// reader returns a reader entry for identity with a fresh ticket and RVN.
func reader(identity string, lease time.Duration) rows.Reader {
	return rows.Reader{Ticket: uuid.NewString(), Identity: identity, Lease: lease, RVN: uuid.NewString()}
}

// share returns the change op of r's entry, expecting expect.
func share(op rows.ShareOp, r rows.Reader, expect string) rows.Share {
	return rows.Share{Op: op, Reader: r, Expect: expect, RVN: uuid.NewString(), Time: wallClock}
}

// joinAt returns the join of r to a row whose lease is seen.
func joinAt(r rows.Reader, seen time.Duration) rows.Share {
	w := share(rows.ShareJoin, r, "")
	w.SeenLease = seen
	return w
}

// mustShare sends w at k, which must land, checks that the row it returns
// is what a Get returns and carries w's RVN, and returns it.
func mustShare(t *testing.T, s rows.Store, k resourcelock.Key, w rows.Share) rows.Item {
	t.Helper()
	it, err := s.Share(ctx(t), k, w)
	if err != nil {
		t.Fatalf("Share %d of %s at %s: %v", w.Op, w.Reader.Identity, k, err)
	}
	if it.RVN != w.RVN {
		t.Fatalf("Share %d: row RVN %q, want the write's %q", w.Op, it.RVN, w.RVN)
	}
	wantStoredItem(t, fmt.Sprintf("after Share %d", w.Op), s, k, it)
	return it
}

// wantReaders fails unless it is held by readers with exactly want, in
// ticket order.
func wantReaders(t *testing.T, what string, it rows.Item, want ...rows.Reader) {
	t.Helper()
	want = slices.Clone(want)
	slices.SortFunc(want, func(a, b rows.Reader) int { return strings.Compare(a.Ticket, b.Ticket) })
	if !it.HeldByReaders() || it.HolderIdentity != rows.ReadersHolder {
		t.Fatalf("%s: row held by %q (released %v), want held by readers", what, it.HolderIdentity, it.Released)
	}
	if !slices.Equal(it.Readers, want) {
		t.Fatalf("%s: readers %+v, want %+v", what, it.Readers, want)
	}
}

// renewed returns r with a fresh RVN.
func renewed(r rows.Reader) rows.Reader {
	r.RVN = uuid.NewString()
	return r
}

func testStoreShareReaders(t *testing.T, s rows.Store) {
	k := storeKey("share")
	a, b := reader("a", 2*time.Second), reader("b", 3*time.Second)
	w := share(rows.ShareBegin, a, "")
	got := mustShare(t, s, k, w)
	wantReaders(t, "a ShareBegin of a missing row", got, a)
	if got.LeaseDuration != a.Lease || !got.AcquireTime.Equal(wallClock) || !got.RenewTime.Equal(wallClock) || got.Acquisitions != 1 {
		t.Fatalf("ShareBegin's row: %+v; want a's lease, the write's time, one acquisition counted", got.Record)
	}
	_, err := s.Share(ctx(t), k, share(rows.ShareBegin, b, ""))
	wantConflict(t, "ShareBegin of a row held by readers", err)

	_, err = s.Share(ctx(t), k, joinAt(b, time.Second))
	wantConflict(t, "ShareJoin expecting another row lease", err)
	got = mustShare(t, s, k, joinAt(b, a.Lease))
	wantReaders(t, "after b joined", got, a, b)
	if got.Acquisitions != 1 {
		t.Fatalf("ShareJoin's row: %+v; want the readers' acquisition kept (a joining reader shares their token)", got.Record)
	}
	if got.LeaseDuration != b.Lease {
		t.Fatalf("row lease %v after b joined, want b's longer %v", got.LeaseDuration, b.Lease)
	}
	short := reader("short", time.Second)
	got = mustShare(t, s, k, joinAt(short, b.Lease))
	if got.LeaseDuration != b.Lease {
		t.Fatalf("row lease %v after a shorter lease joined, want it kept (%v)", got.LeaseDuration, b.Lease)
	}
	got = mustShare(t, s, k, share(rows.ShareLeave, short, short.RVN))

	a2 := renewed(a)
	wa := share(rows.ShareRenew, a2, a.RVN)
	wa.Reader.Lease = time.Hour // a renewal keeps the entry's lease
	got = mustShare(t, s, k, wa)
	wantReaders(t, "after a renewed", got, a2, b)
	_, err = s.Share(ctx(t), k, share(rows.ShareRenew, renewed(a), a.RVN))
	wantConflict(t, "ShareRenew at the entry's old RVN", err)
	if cur, ok := rows.CurrentItem(err); ok && !sameStoreItem(cur, got) {
		t.Fatalf("ShareRenew's conflict carries %s, want %s", formatStoreItem(cur), formatStoreItem(got))
	}
	_, err = s.Share(ctx(t), k, share(rows.ShareRenew, reader("c", time.Second), "x"))
	wantConflict(t, "ShareRenew of an entry the row lacks", err)
	for _, seen := range []time.Duration{time.Second, 3 * time.Second} {
		w := share(rows.ShareRenew, renewed(a2), a2.RVN)
		w.SeenLease = seen
		if _, err = s.Share(ctx(t), k, w); seen == time.Second {
			wantConflict(t, "ShareRenew expecting another row lease", err)
			continue
		} else if err != nil {
			t.Fatalf("ShareRenew expecting the row's lease: %v", err)
		}
		a2 = w.Reader
		got = mustGetItem(t, s, k)
	}

	got = mustShare(t, s, k, share(rows.ShareLeave, b, b.RVN))
	wantReaders(t, "after b left", got, a2)
	if got.LeaseDuration != 3*time.Second {
		t.Fatalf("row lease %v after a leave, want it kept (3s)", got.LeaseDuration)
	}
	_, err = s.Share(ctx(t), k, share(rows.ShareLeave, a2, a2.RVN))
	wantConflict(t, "ShareLeave of the last entry", err)
}

func testStoreShareEnd(t *testing.T, s rows.Store) {
	k := storeKey("share-end")
	a, b := reader("a", time.Second), reader("b", time.Second)
	mustShare(t, s, k, share(rows.ShareBegin, a, ""))
	mustShare(t, s, k, joinAt(b, time.Second))
	_, err := s.Share(ctx(t), k, share(rows.ShareEnd, a, a.RVN))
	wantConflict(t, "ShareEnd of one of two entries", err)
	mustShare(t, s, k, share(rows.ShareLeave, a, a.RVN))
	_, err = s.Share(ctx(t), k, share(rows.ShareEnd, b, "x"))
	wantConflict(t, "ShareEnd at another RVN", err)
	got := mustShare(t, s, k, share(rows.ShareEnd, b, b.RVN))
	if !got.Released || got.HeldByReaders() || got.Readers != nil || !got.Free() {
		t.Fatalf("after the last reader ended: %s; want a free row without readers", formatStoreItem(got))
	}
	// Free: a writer takes it, and a reader begins again.
	held := mustCreate(t, s, k, heldBy("w", time.Second, ""), rows.WriteOptions{})
	if held.Acquisitions != 2 || held.Readers != nil {
		t.Fatalf("a writer's Create after the readers: %s; want the second acquisition (after the readers'), no readers", formatStoreItem(held))
	}
	rel := mustUpdate(t, s, k, asHolder(held), releasedBy("w"), rows.WriteOptions{})
	c := reader("c", time.Second)
	got = mustShare(t, s, k, share(rows.ShareBegin, c, ""))
	wantReaders(t, "a ShareBegin of a released row", got, c)
	if got.AcquisitionID != got.RVN || got.Acquisitions != rel.Acquisitions+1 {
		t.Fatalf("ShareBegin's row: %+v; want the begin's RVN its acquisition ID, and one more acquisition counted", got.Record)
	}
}

func testStoreShareWriters(t *testing.T, s rows.Store) {
	k := storeKey("share-writers")
	held := mustCreate(t, s, k, heldBy("w", time.Second, ""), rows.WriteOptions{})
	a := reader("a", time.Second)
	for _, w := range []rows.Share{share(rows.ShareBegin, a, ""), joinAt(a, time.Second)} {
		_, err := s.Share(ctx(t), k, w)
		wantConflict(t, fmt.Sprintf("Share %d of a row a writer holds", w.Op), err)
	}
	mustJoin(t, s, k, waiter("v"))
	mustUpdate(t, s, k, asHolder(held), releasedBy("w"), rows.WriteOptions{})
	_, err := s.Share(ctx(t), k, share(rows.ShareBegin, a, ""))
	wantConflict(t, "ShareBegin of a released row with a writer queued", err)

	k = storeKey("share-writers-wait")
	mustShare(t, s, k, share(rows.ShareBegin, a, ""))
	_, err = s.Create(ctx(t), k, heldBy("w", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "a writer's Create of a row held by readers", err)
	v := waiter("v")
	got := mustJoin(t, s, k, v)
	wantReaders(t, "a writer queued behind the readers", got, a)
	_, err = s.Share(ctx(t), k, joinAt(reader("b", time.Second), time.Second))
	wantConflict(t, "ShareJoin while a writer waits", err)
	a2 := renewed(a)
	got = mustShare(t, s, k, share(rows.ShareRenew, a2, a.RVN))
	wantQueue(t, "a reader's renewal", got, v)
	// A writer takes the row over at its RVN: the readers are gone.
	taken := mustUpdate(t, s, k, asTakeover(got), heldBy("w", time.Second, ""), rows.WriteOptions{Dequeue: &rows.Dequeue{Tickets: []string{v.Ticket}}})
	if taken.Readers != nil || len(taken.Queue) != 0 || taken.HolderIdentity != "w" {
		t.Fatalf("a writer's takeover of the readers' row: %s; want w holding, no readers, no queue", formatStoreItem(taken))
	}
	_, err = s.Share(ctx(t), k, share(rows.ShareRenew, renewed(a2), a2.RVN))
	wantConflict(t, "a reader's renewal after a writer took the row", err)
	_, err = s.Share(ctx(t), k, share(rows.ShareEnd, a2, a2.RVN))
	wantConflict(t, "a reader's end after a writer took the row", err)
}

func testStoreShareTake(t *testing.T, s rows.Store) {
	k := storeKey("share-take")
	held := mustCreate(t, s, k, heldBy("w", time.Second, ""), rows.WriteOptions{})
	v, u := waiter("v"), waiter("u")
	mustJoin(t, s, k, v)
	mustJoin(t, s, k, u)
	a := reader("a", time.Second)
	w := share(rows.ShareTake, a, "x")
	_, err := s.Share(ctx(t), k, w)
	wantConflict(t, "ShareTake at another RVN", err)
	w = share(rows.ShareTake, a, held.RVN)
	w.Dequeue = []string{u.Ticket}
	_, err = s.Share(ctx(t), k, w)
	wantConflict(t, "ShareTake dequeuing a waiter that is not the queue's head", err)
	w.Dequeue = []string{v.Ticket}
	got := mustShare(t, s, k, w)
	wantReaders(t, "after ShareTake", got, a)
	wantQueue(t, "after ShareTake", got, u)
	if got.Acquisitions != held.Acquisitions+1 || got.AcquisitionID != w.RVN {
		t.Fatalf("ShareTake's row: %+v; want one acquisition counted (the readers' token above the writer's), the take's RVN its ID", got.Record)
	}
	// A take over readers (all of them silent) leaves the taker alone.
	b := reader("b", time.Second)
	mustLeave(t, s, k, u.Ticket)
	mustShare(t, s, k, joinAt(b, time.Second))
	cur := mustGetItem(t, s, k)
	c := reader("c", time.Second)
	got = mustShare(t, s, k, share(rows.ShareTake, c, cur.RVN))
	wantReaders(t, "a ShareTake of a row of silent readers", got, c)
}

func testStoreShareQueuedReaders(t *testing.T, s rows.Store) {
	k := storeKey("share-queued")
	a := reader("a", time.Second)
	mustShare(t, s, k, share(rows.ShareBegin, a, ""))
	queuedReader := func(identity string) (rows.Reader, rows.Waiter) {
		w := waiter(identity)
		w.Shared = true
		return reader(identity, time.Second), w
	}
	r1, q1 := queuedReader("r1")
	r2, q2 := queuedReader("r2")
	r3, q3 := queuedReader("r3")
	v := waiter("v") // a writer
	for _, w := range []rows.Waiter{q1, q2, v, q3} {
		mustJoin(t, s, k, w)
	}
	got := mustGetItem(t, s, k)
	wantQueue(t, "readers and a writer queued", got, q1, q2, v, q3)
	join := func(r rows.Reader, ahead int, w string) rows.Share {
		j := joinAt(r, time.Second)
		j.Ahead, j.Waiter = ahead, w
		return j
	}
	b := reader("b", time.Second)
	for what, j := range map[string]rows.Share{
		"a join expecting an empty queue":                       join(b, 0, ""),
		"a join expecting two readers and nothing else":         join(b, 2, ""),
		"a join expecting three readers ahead (one a writer)":   join(b, 3, ""),
		"a join of r3's wait, behind the writer":                join(r3, 3, q3.Ticket),
		"a join of r3's wait, expecting two readers ahead only": join(r3, 2, q3.Ticket),
	} {
		_, err := s.Share(ctx(t), k, j)
		wantConflict(t, what, err)
	}
	got = mustShare(t, s, k, join(r2, 1, q2.Ticket))
	wantReaders(t, "after r2 joined from the queue", got, a, r2)
	wantQueue(t, "after r2 joined from the queue", got, q1, v, q3)
	got = mustShare(t, s, k, join(r1, 0, q1.Ticket))
	wantReaders(t, "after r1 joined from the queue", got, a, r1, r2)
	wantQueue(t, "after r1 joined from the queue", got, v, q3)
	if got.Acquisitions != 1 {
		t.Fatalf("after joins from the queue: %+v; want the readers' one acquisition", got.Record)
	}
	_, err := s.Share(ctx(t), k, join(r3, 0, q3.Ticket))
	wantConflict(t, "a join of r3's wait, a writer at the head", err)

	// A reader that is not queued joins behind readers queued alone.
	k = storeKey("share-queued-alone")
	mustShare(t, s, k, share(rows.ShareBegin, a, ""))
	_, q4 := queuedReader("r4")
	mustJoin(t, s, k, q4)
	got = mustShare(t, s, k, join(b, 1, ""))
	wantReaders(t, "a reader joined behind a reader queued alone", got, a, b)
	wantQueue(t, "a reader joined behind a reader queued alone", got, q4)
}

func testStoreShareDrop(t *testing.T, s rows.Store) {
	k := storeKey("share-drop")
	a, b, c, d := reader("a", time.Second), reader("b", time.Second), reader("c", time.Second), reader("d", time.Second)
	begin := share(rows.ShareBegin, b, "")
	begin.Upgradeable = true // b is the upgradeable reader
	mustShare(t, s, k, begin)
	for _, r := range []rows.Reader{a, c, d} {
		mustShare(t, s, k, joinAt(r, time.Second))
	}
	renew := func(drop ...rows.Reader) rows.Share {
		w := share(rows.ShareRenew, renewed(a), a.RVN)
		w.Drop = drop
		return w
	}
	stale := c
	stale.RVN = "an older RVN"
	for what, w := range map[string]rows.Share{
		"a drop of an entry at another RVN": renew(stale),
		"a drop of an entry the row lacks":  renew(reader("x", time.Second)),
		"a drop of the upgradeable reader's entry without saying so": func() rows.Share {
			w := renew(c)
			w.DropsUpgrader = true // c is not the upgradeable reader
			return w
		}(),
	} {
		_, err := s.Share(ctx(t), k, w)
		wantConflict(t, what, err)
	}
	w := renew(b, c)
	w.DropsUpgrader = true
	got := mustShare(t, s, k, w)
	a = w.Reader
	wantReaders(t, "after a renewal dropped b and c", got, a, d)
	if got.Upgrader != "" {
		t.Fatalf("after the upgradeable reader's entry was dropped: upgrader %q, want none", got.Upgrader)
	}
	leave := share(rows.ShareLeave, a, a.RVN)
	leave.Drop = []rows.Reader{d}
	_, err := s.Share(ctx(t), k, leave)
	wantConflict(t, "a leave that would leave no entry", err)
	end := share(rows.ShareEnd, a, a.RVN)
	end.Drop = []rows.Reader{d}
	got = mustShare(t, s, k, end)
	if !got.Free() || got.Readers != nil {
		t.Fatalf("after an end that dropped the last other entry: %s; want the row free", formatStoreItem(got))
	}
}

// mustLeave takes ticket, at the head of the queue at k, out of it.
func mustLeave(t *testing.T, s rows.Store, k resourcelock.Key, ticket string) {
	t.Helper()
	if _, err := s.Leave(ctx(t), k, ticket, 0); err != nil {
		t.Fatalf("Leave: %v", err)
	}
}

func testStoreShareKeeps(t *testing.T, s rows.Store) {
	k := storeKey("share-keeps")
	held := mustCreate(t, s, k, heldBy("w", time.Second, "w's data"), rows.WriteOptions{})
	if s.CanFence() {
		var err error
		if held, err = s.Fence(ctx(t), k, "w", held.AcquisitionID); err != nil {
			t.Fatalf("Fence: %v", err)
		}
	}
	rel := releasedBy("w")
	rel.Data = held.Data
	released := mustUpdate(t, s, k, asHolder(held), rel, rows.WriteOptions{})
	a := reader("a", time.Second)
	begin := share(rows.ShareBegin, a, "")
	got := mustShare(t, s, k, begin)
	got2 := mustShare(t, s, k, share(rows.ShareRenew, renewed(a), a.RVN))
	for _, it := range []rows.Item{got, got2} {
		if it.Acquisitions != released.Acquisitions+1 || it.FenceGeneration != released.FenceGeneration ||
			string(it.Data) != "w's data" || it.AcquisitionID != begin.RVN {
			t.Fatalf("a reader's row: %s; want the writer's generation %d, its counter %d plus the readers' one acquisition, the begin's acquisition ID, its data kept", formatStoreItem(it), released.FenceGeneration, released.Acquisitions)
		}
	}
	if s.CanFence() {
		// A hold of readers is fenced as any acquisition.
		fenced, err := s.Fence(ctx(t), k, rows.ReadersHolder, begin.RVN)
		if err != nil || fenced.FenceGeneration <= released.FenceGeneration || fenced.Acquisitions != 2 || !fenced.HeldByReaders() {
			t.Fatalf("Fence of a hold of readers: %s, %v; want a new generation, the counter at 2, still the readers'", formatStoreItem(fenced), err)
		}
	}
}

func testStoreShareInvalid(t *testing.T, s rows.Store) {
	k := storeKey("share-missing")
	a := reader("a", time.Second)
	for _, op := range []rows.ShareOp{rows.ShareJoin, rows.ShareTake, rows.ShareRenew, rows.ShareLeave, rows.ShareEnd} {
		w := share(op, a, "x")
		w.SeenLease = a.Lease
		if op == rows.ShareJoin {
			w.Expect = ""
		}
		_, err := s.Share(ctx(t), k, w)
		if !errors.Is(err, resourcelock.ErrNotFound) {
			t.Fatalf("Share %d of a missing row: %v, want ErrNotFound", op, err)
		}
	}
	wantNoItem(t, "after Shares of a missing row", s, k)
	bad := map[string]rows.Share{
		"no change":                 {Reader: a, RVN: "r"},
		"an unknown change":         {Op: 99, Reader: a, RVN: "r"},
		"no ticket":                 {Op: rows.ShareBegin, Reader: rows.Reader{Identity: "a", Lease: time.Second, RVN: "e"}, RVN: "r"},
		"no identity":               {Op: rows.ShareBegin, Reader: rows.Reader{Ticket: "t", Lease: time.Second, RVN: "e"}, RVN: "r"},
		"no entry RVN":              {Op: rows.ShareBegin, Reader: rows.Reader{Ticket: "t", Identity: "a", Lease: time.Second}, RVN: "r"},
		"no lease":                  {Op: rows.ShareBegin, Reader: rows.Reader{Ticket: "t", Identity: "a", RVN: "e"}, RVN: "r"},
		"a join seeing no lease":    {Op: rows.ShareJoin, Reader: a, RVN: "r"},
		"no row RVN":                {Op: rows.ShareBegin, Reader: a},
		"a renewal expects nothing": {Op: rows.ShareRenew, Reader: a, RVN: "r"},
		"a join dequeues":           {Op: rows.ShareJoin, Reader: a, RVN: "r", SeenLease: time.Second, Dequeue: []string{"x"}},
	}
	for what, w := range bad {
		if _, err := s.Share(ctx(t), k, w); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("Share with %s: %v, want ErrInvalid", what, err)
		}
	}
	wantNoItem(t, "after refused Shares", s, k)
}

func testStoreShareConcurrent(t *testing.T, s rows.Store) {
	k := storeKey("share-concurrent")
	first := reader("first", time.Second)
	mustShare(t, s, k, share(rows.ShareBegin, first, ""))
	const n = 8
	readers := make([]rows.Reader, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range readers {
		readers[i] = reader(fmt.Sprintf("r%d", i), time.Second)
		wg.Go(func() { _, errs[i] = s.Share(ctx(t), k, joinAt(readers[i], time.Second)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("join %d: %v; readers never conflict with each other", i, err)
		}
	}
	wantReaders(t, "after concurrent joins", mustGetItem(t, s, k), append(readers, first)...)
}

// upgradeable returns w as the change of the row's upgradeable reader.
func upgradeable(w rows.Share) rows.Share {
	w.Upgradeable = true
	return w
}

func testStoreShareUpgrader(t *testing.T, s rows.Store) {
	k := storeKey("share-upgrader")
	a, b, c := reader("a", time.Second), reader("b", time.Second), reader("c", time.Second)
	got := mustShare(t, s, k, upgradeable(share(rows.ShareBegin, a, "")))
	if got.Upgrader != a.Ticket {
		t.Fatalf("an upgradeable begin: upgrader %q, want a's ticket", got.Upgrader)
	}
	_, err := s.Share(ctx(t), k, upgradeable(joinAt(b, time.Second)))
	wantConflict(t, "an upgradeable join while another is upgradeable", err)
	got = mustShare(t, s, k, joinAt(b, time.Second))
	if got.Upgrader != a.Ticket {
		t.Fatalf("a plain join: upgrader %q, want a's kept", got.Upgrader)
	}
	_, err = s.Share(ctx(t), k, upgradeable(share(rows.ShareLeave, b, b.RVN)))
	wantConflict(t, "a leave as the upgrader by another reader", err)
	got = mustShare(t, s, k, upgradeable(share(rows.ShareLeave, a, a.RVN)))
	if got.Upgrader != "" {
		t.Fatalf("the upgrader left: upgrader %q, want none", got.Upgrader)
	}
	got = mustShare(t, s, k, upgradeable(joinAt(c, time.Second)))
	if got.Upgrader != c.Ticket {
		t.Fatalf("an upgradeable join: upgrader %q, want c's ticket", got.Upgrader)
	}
	// A writer's takeover ends the readers and their upgrader.
	taken := mustUpdate(t, s, k, asTakeover(got), heldBy("w", time.Second, ""), rows.WriteOptions{})
	if taken.Upgrader != "" || taken.Readers != nil {
		t.Fatalf("a writer's takeover: upgrader %q, readers %+v; want none", taken.Upgrader, taken.Readers)
	}
	mustUpdate(t, s, k, asHolder(taken), releasedBy("w"), rows.WriteOptions{})
	got = mustShare(t, s, k, share(rows.ShareBegin, b, ""))
	if got.Upgrader != "" {
		t.Fatalf("a plain begin after the writer: upgrader %q, want none", got.Upgrader)
	}
	_, err = s.Share(ctx(t), k, upgradeable(share(rows.ShareEnd, b, b.RVN)))
	wantConflict(t, "an end as the upgrader by a reader that is not", err)
	got = mustShare(t, s, k, share(rows.ShareEnd, b, b.RVN))
	if got.Upgrader != "" || !got.Free() {
		t.Fatalf("the last reader ended: upgrader %q, free %v", got.Upgrader, got.Free())
	}
}
