package rowstest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// StoreSuite describes a store for RunStoreConformance.
type StoreSuite struct {
	// New returns a store on a fresh, empty table without a sort key,
	// that keeps TTLs and fencing generations. Scan must see only that
	// subtest's rows. Required.
	New func(t *testing.T) rows.Store
	// Reserved are the attribute names the store refuses in
	// WriteOptions.Attributes (its own key, record and TTL attributes)
	// besides the empty name.
	Reserved []string
	// AttributeValues are at least seven distinct values of the store's
	// application attribute type (dynamodbstore: types.AttributeValue of
	// several kinds), which the attribute subtests write and expect back
	// as given (reflect.DeepEqual). Nil gives seven Go strings, for a
	// store that keeps any value, as the memory store does.
	AttributeValues []any
	// NewWithSortKey, when set, returns a store like New's on a table
	// with a sort key; the sort key subtests run on it.
	NewWithSortKey func(t *testing.T) rows.Store
	// NewUnreachable, when set, returns a store whose every request fails
	// with an error waiting cannot fix (a missing table, say); the suite
	// checks that the store classifies it (resourcelock.Permanent).
	NewUnreachable func(t *testing.T) rows.Store
}

// RunStoreConformance runs the rows.Store contract tests as
// subtests of t, calling suite.New once per subtest: the writes and their
// conditions, Remove, Scan, the queue, fencing, many rows at once, context
// cancellation and WriteOptions (see rows.Store). The subtests
// under "Lease" check the resourcelock.Interface the library's lease of
// one key gives over the store, and those named "Set" its set of keys.
// Some subtests call the store from several goroutines at once. Guarded
// writes are a capability of some stores, not part of the contract, and
// are not run.
func RunStoreConformance(t *testing.T, suite StoreSuite) {
	vals := attrValues(suite.AttributeValues)
	if vals == nil {
		vals = attrValues{"billing", "42", "blob", "true", "list", "43", "new"}
	}
	if len(vals) < 7 {
		t.Fatalf("StoreSuite.AttributeValues has %d values, want at least 7", len(vals))
	}
	tests := []struct {
		name string
		run  func(*testing.T, rows.Store)
	}{
		{"GetMissing", testStoreGetMissing},
		{"CreateThenGet", testStoreCreateThenGet},
		{"CreateWhileHeld", testStoreCreateWhileHeld},
		{"CreateOverReleased", testStoreCreateOverReleased},
		{"UpdateByHolder", testStoreUpdateByHolder},
		{"UpdatePreconditions", testStoreUpdatePreconditions},
		{"UpdateMissing", testStoreUpdateMissing},
		{"TakeoverOnRVN", testStoreTakeover},
		{"TakeoverClearsPreviousRecord", testStoreTakeoverClearsPreviousRecord},
		{"Remove", testStoreRemove},
		{"RemovePreconditions", testStoreRemovePreconditions},
		{"RemoveMissing", testStoreRemoveMissing},
		{"ScanEmpty", testStoreScanEmpty},
		{"ScanAll", func(t *testing.T, s rows.Store) { testStoreScanAll(t, s, vals) }},
		{"ScanPartition", func(t *testing.T, s rows.Store) { testStoreScanPartition(t, s, vals) }},
		{"ScanStopsOnError", func(t *testing.T, s rows.Store) { testStoreScanStops(t, s, vals) }},
		{"Attributes", func(t *testing.T, s rows.Store) { testStoreAttributes(t, s, vals) }},
		{"ReservedAttributes", func(t *testing.T, s rows.Store) { testStoreReservedAttributes(t, s, suite.Reserved, vals) }},
		{"Numbers", func(t *testing.T, s rows.Store) { testStoreNumbers(t, s, vals) }},
		{"ReservedNumbers", func(t *testing.T, s rows.Store) { testStoreReservedNumbers(t, s, suite.Reserved) }},
		{"KeepData", testStoreKeepData},
		{"OnlyIfExists", testStoreOnlyIfExists},
		{"Expires", testStoreExpires},
		{"ExpiresRemovedByEveryWrite", testStoreExpiresRemoved},
		{"KeepTTLAndTTL", testStoreKeepTTL},
		{"IndependentKeys", func(t *testing.T, s rows.Store) { testStoreIndependentKeys(t, s, vals) }},
		{"InvalidArguments", testStoreInvalidArguments},
		{"ConcurrentCreateHasOneWinner", testStoreConcurrentCreate},
		{"ConcurrentTakeoverHasOneWinner", testStoreConcurrentTakeover},
		{"Describe", testStoreDescribe},
		{"ConflictCarriesTheRowFound", testStoreConflictCurrent},
		{"FenceTokensGrow", testStoreFence},
		{"FenceRefusesAnotherAcquisition", testStoreFenceConflict},
		{"CancelledContextWritesNothing", testStoreCancelled},
		{"QueueJoinsInOrder", testStoreQueueJoin},
		{"QueueSurvivesWrites", testStoreQueueKept},
		{"QueueLeave", testStoreQueueLeave},
		{"QueueHandOver", testStoreQueueHandOver},
		{"QueueFull", testStoreQueueFull},
		{"ShareReadersCome", testStoreShareReaders},
		{"ShareLastReaderReleases", testStoreShareEnd},
		{"ShareRespectsWriters", testStoreShareWriters},
		{"ShareTakeOnRVN", testStoreShareTake},
		{"ShareJoinOfQueuedReaders", testStoreShareQueuedReaders},
		{"ShareDropsSilentReaders", testStoreShareDrop},
		{"ShareKeepsTokenAndData", testStoreShareKeeps},
		{"ShareMissingAndInvalid", testStoreShareInvalid},
		{"ShareConcurrentJoinsAllLand", testStoreShareConcurrent},
		{"ShareOneUpgrader", testStoreShareUpgrader},
		{"StandKeepsTheRecord", testStoreStand},
		{"StandSurvivesWrites", testStoreStandKept},
		{"StandMissingFullAndInvalid", testStoreStandInvalid},
		{"StandConcurrentCandidatesAllLand", testStoreStandConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, suite.New(t))
		})
	}
	t.Run("Many", func(t *testing.T) { runManyConformance(t, suite.New) })
	t.Run("Lease", func(t *testing.T) { runLeaseConformance(t, suite.New, false) })
	if suite.NewWithSortKey != nil {
		t.Run("SortKeys", func(t *testing.T) { testStoreSortKeys(t, suite.NewWithSortKey(t)) })
		t.Run("LeaseWithSortKey", func(t *testing.T) { runLeaseConformance(t, suite.NewWithSortKey, true) })
	}
	if suite.NewUnreachable != nil {
		t.Run("PermanentErrors", func(t *testing.T) { testStorePermanent(t, suite.NewUnreachable(t)) })
	}
}

func testStoreGetMissing(t *testing.T, s rows.Store) {
	wantNoItem(t, "empty table", s, storeKey("missing"))
}

func testStoreCreateThenGet(t *testing.T, s rows.Store) {
	k := storeKey("create")
	in := heldBy("a", 3*time.Second, "payload")
	in.Acquisitions = 42 // maintained by the store, whatever rec holds
	got, err := s.Create(ctx(t), k, in, rows.WriteOptions{})
	if err != nil {
		t.Fatalf("Create on a missing row: %v", err)
	}
	want := storedItem(k, in, 1)
	wantStoreItem(t, "Create result", got, want)
	wantStoredItem(t, "after Create", s, k, want)
}

func testStoreCreateWhileHeld(t *testing.T, s rows.Store) {
	k := storeKey("held")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	_, err := s.Create(ctx(t), k, heldBy("b", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "Create by another holder while held", err)
	_, err = s.Create(ctx(t), k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "Create by the holder while held", err)
	_, err = s.Create(ctx(t), k, heldBy("b", time.Second, ""), rows.WriteOptions{KeepData: true})
	wantConflict(t, "Create with KeepData while held", err)
	wantStoredItem(t, "after failed Creates", s, k, first)
}

func testStoreCreateOverReleased(t *testing.T, s rows.Store) {
	k := storeKey("released")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	rel := mustUpdate(t, s, k, asHolder(first), releasedBy("a"), rows.WriteOptions{})
	if !rel.Released || rel.Acquisitions != 1 {
		t.Fatalf("release stored %s, want released with 1 transition", formatStoreItem(rel))
	}
	in := heldBy("b", 2*time.Second, "")
	got, err := s.Create(ctx(t), k, in, rows.WriteOptions{})
	if err != nil {
		t.Fatalf("Create over a released row: %v", err)
	}
	want := storedItem(k, in, 2)
	wantStoreItem(t, "Create over a released row (a new acquisition, a's data gone)", got, want)
	wantStoredItem(t, "after Create over a released row", s, k, want)
	_, err = s.Create(ctx(t), k, heldBy("c", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "Create once taken again", err)
}

func testStoreUpdateByHolder(t *testing.T, s rows.Store) {
	k := storeKey("renew")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "x"), rows.WriteOptions{})
	cur := first
	for i := range 2 {
		in := heldBy("a", time.Duration(2+i)*time.Second, fmt.Sprintf("renewal %d", i))
		got, err := s.Update(ctx(t), k, asHolder(cur), in, rows.WriteOptions{})
		if err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
		want := storedItem(k, in, 1)
		want.AcquisitionID = first.AcquisitionID // a renewal keeps the acquisition
		wantStoreItem(t, "renewal result (transitions unchanged)", got, want)
		wantStoredItem(t, "after renewal", s, k, want)
		cur = got
	}
	_, err := s.Update(ctx(t), k, asHolder(first), heldBy("a", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "renewal on an RVN already replaced", err)
	wantStoredItem(t, "after a failed renewal", s, k, cur)
}

func testStoreUpdatePreconditions(t *testing.T, s rows.Store) {
	k := storeKey("preconditions")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	for what, p := range map[string]resourcelock.Precondition{
		"renewal on a wrong RVN":        {RVN: uuid.NewString(), HolderIdentity: "a"},
		"renewal naming another holder": {RVN: first.RVN, HolderIdentity: "b"},
		"takeover on a wrong RVN":       {RVN: uuid.NewString()},
	} {
		_, err := s.Update(ctx(t), k, p, heldBy("b", time.Second, "b's"), rows.WriteOptions{})
		wantConflict(t, what, err)
		wantStoredItem(t, "after "+what, s, k, first)
	}
}

func testStoreUpdateMissing(t *testing.T, s rows.Store) {
	k := storeKey("missing")
	_, err := s.Update(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString()}, heldBy("a", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "takeover of a missing row", err)
	_, err = s.Update(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString(), HolderIdentity: "a"}, heldBy("a", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "renewal of a missing row", err)
	wantNoItem(t, "after Updates of a missing row", s, k)
}

func testStoreTakeover(t *testing.T, s rows.Store) {
	k := storeKey("takeover")
	first := mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	in := heldBy("b", 4*time.Second, "b's")
	got, err := s.Update(ctx(t), k, asTakeover(first), in, rows.WriteOptions{})
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	want := storedItem(k, in, 2)
	wantStoreItem(t, "takeover result (one more transition)", got, want)
	wantStoredItem(t, "after takeover", s, k, want)

	_, err = s.Update(ctx(t), k, asHolder(first), heldBy("a", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "renewal by the previous holder", err)
	_, err = s.Update(ctx(t), k, asTakeover(first), heldBy("c", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "takeover on the replaced RVN", err)
	wantStoredItem(t, "after failed writes on the replaced RVN", s, k, want)

	// The new holder's own writes leave the count alone; a takeover by
	// the same identity without HolderIdentity still counts.
	renewed := mustUpdate(t, s, k, asHolder(got), heldBy("b", time.Second, ""), rows.WriteOptions{})
	if renewed.Acquisitions != 2 {
		t.Fatalf("renewal after takeover stored %d transitions, want 2", renewed.Acquisitions)
	}
	again := mustUpdate(t, s, k, asTakeover(renewed), heldBy("b", time.Second, ""), rows.WriteOptions{})
	if again.Acquisitions != 3 {
		t.Fatalf("takeover without HolderIdentity by the holder itself stored %d transitions, want 3", again.Acquisitions)
	}
}

func testStoreTakeoverClearsPreviousRecord(t *testing.T, s rows.Store) {
	k := storeKey("clears")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "old data"), rows.WriteOptions{})
	in := heldBy("b", time.Second, "")
	in.AcquireTime, in.RenewTime = time.Time{}, time.Time{}
	got := mustUpdate(t, s, k, asTakeover(first), in, rows.WriteOptions{})
	wantStoreItem(t, "takeover without data or times", got, storedItem(k, in, 2))
}

func testStoreRemove(t *testing.T, s rows.Store) {
	k := storeKey("remove")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	if err := s.Remove(ctx(t), k, asHolder(first)); err != nil {
		t.Fatalf("Remove by the holder: %v", err)
	}
	wantNoItem(t, "after Remove by the holder", s, k)
	err := s.Remove(ctx(t), k, asHolder(first))
	wantConflict(t, "Remove again", err)

	// A row created after a removal starts counting again.
	second := mustCreate(t, s, k, heldBy("b", time.Second, ""), rows.WriteOptions{})
	wantStoreItem(t, "Create after Remove", second, storedItem(k, second.Record, 1))
	if err := s.Remove(ctx(t), k, asTakeover(second)); err != nil {
		t.Fatalf("Remove on the RVN alone: %v", err)
	}
	wantNoItem(t, "after Remove on the RVN alone", s, k)

	// A released row is removed like any other.
	third := mustCreate(t, s, k, heldBy("c", time.Second, ""), rows.WriteOptions{})
	rel := mustUpdate(t, s, k, asHolder(third), releasedBy("c"), rows.WriteOptions{})
	if err := s.Remove(ctx(t), k, asHolder(rel)); err != nil {
		t.Fatalf("Remove of a released row: %v", err)
	}
	wantNoItem(t, "after Remove of a released row", s, k)
}

func testStoreRemovePreconditions(t *testing.T, s rows.Store) {
	k := storeKey("remove-preconditions")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	for what, p := range map[string]resourcelock.Precondition{
		"Remove on a wrong RVN":                {RVN: uuid.NewString()},
		"Remove on a wrong RVN and the holder": {RVN: uuid.NewString(), HolderIdentity: "a"},
		"Remove naming another holder":         {RVN: first.RVN, HolderIdentity: "b"},
	} {
		wantConflict(t, what, s.Remove(ctx(t), k, p))
		wantStoredItem(t, "after "+what, s, k, first)
	}
	// After a takeover the previous holder's RVN removes nothing.
	taken := mustUpdate(t, s, k, asTakeover(first), heldBy("b", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "Remove by the previous holder", s.Remove(ctx(t), k, asHolder(first)))
	wantStoredItem(t, "after Remove by the previous holder", s, k, taken)
}

func testStoreRemoveMissing(t *testing.T, s rows.Store) {
	k := storeKey("remove-missing")
	wantConflict(t, "Remove of a missing row", s.Remove(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString()}))
	wantConflict(t, "Remove of a missing row with a holder", s.Remove(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString(), HolderIdentity: "a"}))
	wantNoItem(t, "after Remove of a missing row", s, k)
}

func testStoreIndependentKeys(t *testing.T, s rows.Store, vals attrValues) {
	ka, kb := storeKey("a"), storeKey("b")
	a := mustCreate(t, s, ka, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	b := mustCreate(t, s, kb, heldBy("b", time.Second, "b's"), rows.WriteOptions{})
	if a.Acquisitions != 1 || b.Acquisitions != 1 {
		t.Fatalf("first Creates of two keys stored %d and %d transitions, want 1 each", a.Acquisitions, b.Acquisitions)
	}

	// B's state admits no write to A.
	_, err := s.Update(ctx(t), ka, asTakeover(b), heldBy("x", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "takeover of A on B's RVN", err)
	_, err = s.Update(ctx(t), ka, asHolder(b), heldBy("b", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "renewal of A on B's RVN and holder", err)
	wantConflict(t, "Remove of A on B's RVN", s.Remove(ctx(t), ka, asHolder(b)))
	wantStoredItem(t, "A after writes on B's state", s, ka, a)

	// Writes to B leave A alone.
	rb := mustUpdate(t, s, kb, asHolder(b), releasedBy("b"), rows.WriteOptions{})
	_, err = s.Create(ctx(t), ka, heldBy("x", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "Create of A while only B is released", err)
	b2 := mustCreate(t, s, kb, heldBy("x", time.Second, ""), rows.WriteOptions{Attributes: attributeMap("only-b", vals[0])})
	if b2.Acquisitions != rb.Acquisitions+1 {
		t.Fatalf("B's transitions went from %d to %d", rb.Acquisitions, b2.Acquisitions)
	}
	if err := s.Remove(ctx(t), kb, asHolder(b2)); err != nil {
		t.Fatalf("Remove of B: %v", err)
	}
	wantStoredItem(t, "A after writes to B", s, ka, a)

	// Many keys created at once are all created.
	keys := make([]resourcelock.Key, racers)
	for i := range keys {
		keys[i] = storeKey(racerName(i))
	}
	wins := race(t, racers, func(i int) error {
		_, err := s.Create(ctx(t), keys[i], heldBy(racerName(i), time.Second, ""), rows.WriteOptions{})
		return err
	})
	if wins != racers {
		t.Fatalf("%d of %d concurrent Creates of distinct keys succeeded", wins, racers)
	}
	for i, k := range keys {
		if got := mustGetItem(t, s, k); got.HolderIdentity != racerName(i) || got.Acquisitions != 1 {
			t.Errorf("key %s holds %s, want holder %s with 1 transition", k, formatStoreItem(got), racerName(i))
		}
	}
	wantStoredItem(t, "A after concurrent Creates of other keys", s, ka, a)
}

func testStoreInvalidArguments(t *testing.T, s rows.Store) {
	k := storeKey("invalid")
	valid := heldBy("a", time.Second, "")
	wantInvalid := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("%s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
	for what, bk := range map[string]resourcelock.Key{
		"an empty partition":      {},
		"a partition over 2048 B": {Partition: strings.Repeat("p", record.MaxNameBytes+1)},
		"a sort key value only":   {Sort: "s"},
	} {
		_, err := s.Get(ctx(t), bk)
		wantInvalid("Get with "+what, err)
		_, err = s.Create(ctx(t), bk, valid, rows.WriteOptions{})
		wantInvalid("Create with "+what, err)
		_, err = s.Update(ctx(t), bk, resourcelock.Precondition{RVN: "r"}, valid, rows.WriteOptions{})
		wantInvalid("Update with "+what, err)
		wantInvalid("Remove with "+what, s.Remove(ctx(t), bk, resourcelock.Precondition{RVN: "r"}))
	}

	bad := map[string]resourcelock.Record{
		"no holder (a Store has no identity to fill in)": {RVN: "r", LeaseDuration: time.Second},
		"no RVN":         {HolderIdentity: "a", LeaseDuration: time.Second},
		"zero lease":     {HolderIdentity: "a", RVN: "r"},
		"negative lease": {HolderIdentity: "a", RVN: "r", LeaseDuration: -time.Second},
		"data too large": {HolderIdentity: "a", RVN: "r", LeaseDuration: time.Second, Data: bytes.Repeat([]byte{1}, record.MaxDataBytes+1)},
	}
	for what, r := range bad {
		_, err := s.Create(ctx(t), k, r, rows.WriteOptions{})
		wantInvalid("Create with "+what, err)
		_, err = s.Update(ctx(t), k, resourcelock.Precondition{RVN: "r"}, r, rows.WriteOptions{})
		wantInvalid("Update with "+what, err)
	}
	_, err := s.Update(ctx(t), k, resourcelock.Precondition{HolderIdentity: "a"}, valid, rows.WriteOptions{})
	wantInvalid("Update without precondition RVN", err)
	wantInvalid("Remove without precondition RVN", s.Remove(ctx(t), k, resourcelock.Precondition{HolderIdentity: "a"}))
	if got := scanStore(t, s, ""); len(got) != 0 {
		t.Fatalf("invalid writes stored %d rows", len(got))
	}

	// On an existing row too, nothing is written.
	first := mustCreate(t, s, k, valid, rows.WriteOptions{})
	for what, r := range bad {
		_, err := s.Update(ctx(t), k, asTakeover(first), r, rows.WriteOptions{})
		wantInvalid("takeover with "+what, err)
	}
	_, err = s.Update(ctx(t), k, resourcelock.Precondition{HolderIdentity: "a"}, valid, rows.WriteOptions{})
	wantInvalid("Update without precondition RVN on an existing row", err)
	wantInvalid("Remove without precondition RVN on an existing row", s.Remove(ctx(t), k, resourcelock.Precondition{HolderIdentity: "a"}))
	wantStoredItem(t, "after invalid writes", s, k, first)
}

func testStoreConcurrentCreate(t *testing.T, s rows.Store) {
	k := storeKey("concurrent-create")
	var mu sync.Mutex
	var winner rows.Item
	wins := race(t, racers, func(i int) error {
		it, err := s.Create(ctx(t), k, heldBy(racerName(i), time.Second, ""), rows.WriteOptions{})
		if err == nil {
			mu.Lock()
			winner = it
			mu.Unlock()
		}
		return err
	})
	if wins != 1 {
		t.Fatalf("%d concurrent Creates succeeded, want exactly 1", wins)
	}
	if winner.Acquisitions != 1 {
		t.Fatalf("the winning Create stored %d transitions, want 1", winner.Acquisitions)
	}
	wantStoredItem(t, "after concurrent Creates", s, k, winner)
}

func testStoreConcurrentTakeover(t *testing.T, s rows.Store) {
	k := storeKey("concurrent-takeover")
	first := mustCreate(t, s, k, heldBy("old", time.Second, ""), rows.WriteOptions{})
	var mu sync.Mutex
	var winner rows.Item
	wins := race(t, racers, func(i int) error {
		it, err := s.Update(ctx(t), k, asTakeover(first), heldBy(racerName(i), time.Second, ""), rows.WriteOptions{})
		if err == nil {
			mu.Lock()
			winner = it
			mu.Unlock()
		}
		return err
	})
	if wins != 1 {
		t.Fatalf("%d concurrent takeovers succeeded, want exactly 1", wins)
	}
	if winner.Acquisitions != 2 {
		t.Fatalf("the winning takeover stored %d transitions, want 2", winner.Acquisitions)
	}
	wantStoredItem(t, "after concurrent takeovers", s, k, winner)
}

// testStoreConflictCurrent checks what a failed condition reports of the
// row: a store need not return it (rows.CurrentItem may
// find none), but one that does returns the row as it was, and none for a
// missing row.
func testStoreConflictCurrent(t *testing.T, s rows.Store) {
	k := storeKey("conflict-current")
	_, err := s.Update(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString()}, heldBy("a", time.Second, ""), rows.WriteOptions{})
	wantConflict(t, "takeover of a missing row", err)
	if it, ok := rows.CurrentItem(err); ok {
		t.Errorf("a failed takeover of a missing row carries a row: %s", formatStoreItem(it))
	}
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	for what, write := range map[string]func() error{
		"Create while held": func() error {
			_, err := s.Create(ctx(t), k, heldBy("b", time.Second, ""), rows.WriteOptions{})
			return err
		},
		"takeover on a wrong RVN": func() error {
			_, err := s.Update(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString()}, heldBy("b", time.Second, ""), rows.WriteOptions{})
			return err
		},
		"renewal naming another holder": func() error {
			_, err := s.Update(ctx(t), k, resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "b"}, heldBy("b", time.Second, ""), rows.WriteOptions{})
			return err
		},
	} {
		err := write()
		wantConflict(t, what, err)
		if it, ok := rows.CurrentItem(err); ok {
			wantStoreItem(t, what+": the row carried by the conflict", it, first)
		}
	}
}

func testStoreDescribe(t *testing.T, s rows.Store) {
	if s.Describe() == "" {
		t.Fatal("Describe() is empty")
	}
}
