package resourcelocktest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease/resourcelock"
)

// RunStoreConformance runs the resourcelock.Store contract tests as subtests
// of t, calling newStore once per subtest for a store on a fresh, empty
// table without a sort key, whose key attribute is
// resourcelock.DefaultPartitionKey and whose TTL attribute is
// resourcelock.DefaultTTLAttribute. Scan must see only that subtest's rows.
// The contract is that of resourcelock.Interface, per key, plus Remove, Scan
// and WriteOptions; see resourcelock.Store. Some subtests call the store from
// several goroutines at once.
func RunStoreConformance(t *testing.T, newStore func(t *testing.T) resourcelock.Store) {
	tests := []struct {
		name string
		run  func(*testing.T, resourcelock.Store)
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
		{"ScanAll", testStoreScanAll},
		{"ScanPartition", testStoreScanPartition},
		{"ScanStopsOnError", testStoreScanStops},
		{"Attributes", testStoreAttributes},
		{"ReservedAttributes", testStoreReservedAttributes},
		{"KeepData", testStoreKeepData},
		{"OnlyIfExists", testStoreOnlyIfExists},
		{"Expires", testStoreExpires},
		{"ExpiresRemovedByEveryWrite", testStoreExpiresRemoved},
		{"IndependentKeys", testStoreIndependentKeys},
		{"InvalidArguments", testStoreInvalidArguments},
		{"ConcurrentCreateHasOneWinner", testStoreConcurrentCreate},
		{"ConcurrentTakeoverHasOneWinner", testStoreConcurrentTakeover},
		{"Describe", testStoreDescribe},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newStore(t))
		})
	}
}

// storeKey returns a fresh key whose partition value starts with name, so
// that the rows of separate checks in one table never meet.
func storeKey(name string) resourcelock.Key {
	return resourcelock.Key{Partition: name + "-" + uuid.NewString()}
}

// heldBy returns a record for a write by holder, with a fresh RVN.
func heldBy(holder string, lease time.Duration, data string) resourcelock.Record {
	r := rec(lease, data)
	r.HolderIdentity = holder
	return r
}

// releasedBy returns a release of the lease by holder, with a fresh RVN.
func releasedBy(holder string) resourcelock.Record {
	r := heldBy(holder, time.Second, "")
	r.Released = true
	return r
}

// storedItem returns the item a store must hold after writing r at k: r with
// the given transitions, no attributes and no TTL.
func storedItem(k resourcelock.Key, r resourcelock.Record, transitions int64) resourcelock.Item {
	r.LeaderTransitions = transitions
	r.AcquisitionID = r.RVN // as an acquiring write stores it
	return resourcelock.Item{Key: k, Record: r}
}

// asHolder returns the holder's precondition on it: its RVN and holder.
func asHolder(it resourcelock.Item) resourcelock.Precondition {
	return resourcelock.Precondition{RVN: it.RVN, Owner: it.HolderIdentity}
}

// asTakeover returns a takeover's precondition on it: its RVN alone.
func asTakeover(it resourcelock.Item) resourcelock.Precondition {
	return resourcelock.Precondition{RVN: it.RVN}
}

// sameStoreItem reports whether a and b hold the same values. Nil and empty
// attribute maps are the same.
func sameStoreItem(a, b resourcelock.Item) bool {
	return a.Key == b.Key && a.Record.Equal(b.Record) && a.Expires.Equal(b.Expires) &&
		sameAttributeValues(a.Attributes, b.Attributes)
}

func sameAttributeValues(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for name, v := range a {
		w, ok := b[name]
		if !ok || !reflect.DeepEqual(v, w) {
			return false
		}
	}
	return true
}

// formatStoreItem renders it for failure messages, attribute values included.
func formatStoreItem(it resourcelock.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{Key:%q Record:%+v", it.Key.String(), it.Record)
	if !it.Expires.IsZero() {
		fmt.Fprintf(&b, " Expires:%s", it.Expires.UTC().Format(time.RFC3339Nano))
	}
	if len(it.Attributes) > 0 {
		names := make([]string, 0, len(it.Attributes))
		for n := range it.Attributes {
			names = append(names, n)
		}
		sort.Strings(names)
		b.WriteString(" Attributes:{")
		for i, n := range names {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s:%s", n, formatAttributeValue(it.Attributes[n]))
		}
		b.WriteString("}")
	}
	b.WriteString("}")
	return b.String()
}

func formatAttributeValue(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("S(%q)", v.Value)
	case *types.AttributeValueMemberN:
		return "N(" + v.Value + ")"
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B(%x)", v.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL(%t)", v.Value)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = formatAttributeValue(e)
		}
		return "L[" + strings.Join(parts, " ") + "]"
	default:
		return fmt.Sprintf("%T%+v", v, v)
	}
}

func wantStoreItem(t *testing.T, what string, got, want resourcelock.Item) {
	t.Helper()
	if !sameStoreItem(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, formatStoreItem(got), formatStoreItem(want))
	}
}

// mustGetItem reads k, which must exist.
func mustGetItem(t *testing.T, s resourcelock.Store, k resourcelock.Key) resourcelock.Item {
	t.Helper()
	it, err := s.Get(ctx(t), k)
	if err != nil {
		t.Fatalf("Get %s: %v", k, err)
	}
	return it
}

// wantStoredItem checks that a Get of k returns want.
func wantStoredItem(t *testing.T, what string, s resourcelock.Store, k resourcelock.Key, want resourcelock.Item) {
	t.Helper()
	wantStoreItem(t, what+" (Get)", mustGetItem(t, s, k), want)
}

func wantNoItem(t *testing.T, what string, s resourcelock.Store, k resourcelock.Key) {
	t.Helper()
	if it, err := s.Get(ctx(t), k); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("%s: Get %s = %s, %v; want ErrNotFound", what, k, formatStoreItem(it), err)
	}
}

// mustCreate writes r at k, which must succeed, and checks that the result is
// what a Get returns.
func mustCreate(t *testing.T, s resourcelock.Store, k resourcelock.Key, r resourcelock.Record, opts resourcelock.WriteOptions) resourcelock.Item {
	t.Helper()
	it, err := s.Create(ctx(t), k, r, opts)
	if err != nil {
		t.Fatalf("Create %s: %v", k, err)
	}
	wantStoredItem(t, "after Create "+k.String(), s, k, it)
	return it
}

// mustUpdate writes r at k on expect, which must succeed, and checks that the
// result is what a Get returns.
func mustUpdate(t *testing.T, s resourcelock.Store, k resourcelock.Key, expect resourcelock.Precondition, r resourcelock.Record, opts resourcelock.WriteOptions) resourcelock.Item {
	t.Helper()
	it, err := s.Update(ctx(t), k, expect, r, opts)
	if err != nil {
		t.Fatalf("Update %s on %+v: %v", k, expect, err)
	}
	wantStoredItem(t, "after Update "+k.String(), s, k, it)
	return it
}

func testStoreGetMissing(t *testing.T, s resourcelock.Store) {
	wantNoItem(t, "empty table", s, storeKey("missing"))
}

func testStoreCreateThenGet(t *testing.T, s resourcelock.Store) {
	k := storeKey("create")
	in := heldBy("a", 3*time.Second, "payload")
	in.LeaderTransitions = 42 // maintained by the store, whatever rec holds
	got, err := s.Create(ctx(t), k, in, resourcelock.WriteOptions{})
	if err != nil {
		t.Fatalf("Create on a missing row: %v", err)
	}
	want := storedItem(k, in, 1)
	wantStoreItem(t, "Create result", got, want)
	wantStoredItem(t, "after Create", s, k, want)
}

func testStoreCreateWhileHeld(t *testing.T, s resourcelock.Store) {
	k := storeKey("held")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), resourcelock.WriteOptions{})
	_, err := s.Create(ctx(t), k, heldBy("b", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "Create by another holder while held", err)
	_, err = s.Create(ctx(t), k, heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "Create by the holder while held", err)
	_, err = s.Create(ctx(t), k, heldBy("b", time.Second, ""), resourcelock.WriteOptions{KeepData: true})
	wantConflict(t, "Create with KeepData while held", err)
	wantStoredItem(t, "after failed Creates", s, k, first)
}

func testStoreCreateOverReleased(t *testing.T, s resourcelock.Store) {
	k := storeKey("released")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), resourcelock.WriteOptions{})
	rel := mustUpdate(t, s, k, asHolder(first), releasedBy("a"), resourcelock.WriteOptions{})
	if !rel.Released || rel.LeaderTransitions != 1 {
		t.Fatalf("release stored %s, want released with 1 transition", formatStoreItem(rel))
	}
	in := heldBy("b", 2*time.Second, "")
	got, err := s.Create(ctx(t), k, in, resourcelock.WriteOptions{})
	if err != nil {
		t.Fatalf("Create over a released row: %v", err)
	}
	want := storedItem(k, in, 2)
	wantStoreItem(t, "Create over a released row (a new acquisition, a's data gone)", got, want)
	wantStoredItem(t, "after Create over a released row", s, k, want)
	_, err = s.Create(ctx(t), k, heldBy("c", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "Create once taken again", err)
}

func testStoreUpdateByHolder(t *testing.T, s resourcelock.Store) {
	k := storeKey("renew")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "x"), resourcelock.WriteOptions{})
	cur := first
	for i := range 2 {
		in := heldBy("a", time.Duration(2+i)*time.Second, fmt.Sprintf("renewal %d", i))
		got, err := s.Update(ctx(t), k, asHolder(cur), in, resourcelock.WriteOptions{})
		if err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
		want := storedItem(k, in, 1)
		want.AcquisitionID = first.AcquisitionID // a renewal keeps the acquisition
		wantStoreItem(t, "renewal result (transitions unchanged)", got, want)
		wantStoredItem(t, "after renewal", s, k, want)
		cur = got
	}
	_, err := s.Update(ctx(t), k, asHolder(first), heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "renewal on an RVN already replaced", err)
	wantStoredItem(t, "after a failed renewal", s, k, cur)
}

func testStoreUpdatePreconditions(t *testing.T, s resourcelock.Store) {
	k := storeKey("preconditions")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), resourcelock.WriteOptions{})
	for what, p := range map[string]resourcelock.Precondition{
		"renewal on a wrong RVN":        {RVN: uuid.NewString(), Owner: "a"},
		"renewal naming another holder": {RVN: first.RVN, Owner: "b"},
		"takeover on a wrong RVN":       {RVN: uuid.NewString()},
	} {
		_, err := s.Update(ctx(t), k, p, heldBy("b", time.Second, "b's"), resourcelock.WriteOptions{})
		wantConflict(t, what, err)
		wantStoredItem(t, "after "+what, s, k, first)
	}
}

func testStoreUpdateMissing(t *testing.T, s resourcelock.Store) {
	k := storeKey("missing")
	_, err := s.Update(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString()}, heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "takeover of a missing row", err)
	_, err = s.Update(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString(), Owner: "a"}, heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "renewal of a missing row", err)
	wantNoItem(t, "after Updates of a missing row", s, k)
}

func testStoreTakeover(t *testing.T, s resourcelock.Store) {
	k := storeKey("takeover")
	first := mustCreate(t, s, k, heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	in := heldBy("b", 4*time.Second, "b's")
	got, err := s.Update(ctx(t), k, asTakeover(first), in, resourcelock.WriteOptions{})
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	want := storedItem(k, in, 2)
	wantStoreItem(t, "takeover result (one more transition)", got, want)
	wantStoredItem(t, "after takeover", s, k, want)

	_, err = s.Update(ctx(t), k, asHolder(first), heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "renewal by the previous holder", err)
	_, err = s.Update(ctx(t), k, asTakeover(first), heldBy("c", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "takeover on the replaced RVN", err)
	wantStoredItem(t, "after failed writes on the replaced RVN", s, k, want)

	// The new holder's own writes leave the count alone; a takeover by
	// the same identity without Owner still counts.
	renewed := mustUpdate(t, s, k, asHolder(got), heldBy("b", time.Second, ""), resourcelock.WriteOptions{})
	if renewed.LeaderTransitions != 2 {
		t.Fatalf("renewal after takeover stored %d transitions, want 2", renewed.LeaderTransitions)
	}
	again := mustUpdate(t, s, k, asTakeover(renewed), heldBy("b", time.Second, ""), resourcelock.WriteOptions{})
	if again.LeaderTransitions != 3 {
		t.Fatalf("takeover without Owner by the holder itself stored %d transitions, want 3", again.LeaderTransitions)
	}
}

func testStoreTakeoverClearsPreviousRecord(t *testing.T, s resourcelock.Store) {
	k := storeKey("clears")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "old data"), resourcelock.WriteOptions{})
	in := heldBy("b", time.Second, "")
	in.AcquireTime, in.RenewTime = time.Time{}, time.Time{}
	got := mustUpdate(t, s, k, asTakeover(first), in, resourcelock.WriteOptions{})
	wantStoreItem(t, "takeover without data or times", got, storedItem(k, in, 2))
}

func testStoreRemove(t *testing.T, s resourcelock.Store) {
	k := storeKey("remove")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), resourcelock.WriteOptions{})
	if err := s.Remove(ctx(t), k, asHolder(first)); err != nil {
		t.Fatalf("Remove by the holder: %v", err)
	}
	wantNoItem(t, "after Remove by the holder", s, k)
	err := s.Remove(ctx(t), k, asHolder(first))
	wantConflict(t, "Remove again", err)

	// A row created after a removal starts counting again.
	second := mustCreate(t, s, k, heldBy("b", time.Second, ""), resourcelock.WriteOptions{})
	wantStoreItem(t, "Create after Remove", second, storedItem(k, second.Record, 1))
	if err := s.Remove(ctx(t), k, asTakeover(second)); err != nil {
		t.Fatalf("Remove on the RVN alone: %v", err)
	}
	wantNoItem(t, "after Remove on the RVN alone", s, k)

	// A released row is removed like any other.
	third := mustCreate(t, s, k, heldBy("c", time.Second, ""), resourcelock.WriteOptions{})
	rel := mustUpdate(t, s, k, asHolder(third), releasedBy("c"), resourcelock.WriteOptions{})
	if err := s.Remove(ctx(t), k, asHolder(rel)); err != nil {
		t.Fatalf("Remove of a released row: %v", err)
	}
	wantNoItem(t, "after Remove of a released row", s, k)
}

func testStoreRemovePreconditions(t *testing.T, s resourcelock.Store) {
	k := storeKey("remove-preconditions")
	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), resourcelock.WriteOptions{})
	for what, p := range map[string]resourcelock.Precondition{
		"Remove on a wrong RVN":               {RVN: uuid.NewString()},
		"Remove on a wrong RVN and the owner": {RVN: uuid.NewString(), Owner: "a"},
		"Remove naming another holder":        {RVN: first.RVN, Owner: "b"},
	} {
		wantConflict(t, what, s.Remove(ctx(t), k, p))
		wantStoredItem(t, "after "+what, s, k, first)
	}
	// After a takeover the previous holder's RVN removes nothing.
	taken := mustUpdate(t, s, k, asTakeover(first), heldBy("b", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "Remove by the previous holder", s.Remove(ctx(t), k, asHolder(first)))
	wantStoredItem(t, "after Remove by the previous holder", s, k, taken)
}

func testStoreRemoveMissing(t *testing.T, s resourcelock.Store) {
	k := storeKey("remove-missing")
	wantConflict(t, "Remove of a missing row", s.Remove(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString()}))
	wantConflict(t, "Remove of a missing row with owner", s.Remove(ctx(t), k, resourcelock.Precondition{RVN: uuid.NewString(), Owner: "a"}))
	wantNoItem(t, "after Remove of a missing row", s, k)
}

// scanStore collects what Scan passes to fn, failing on any error and on a
// key seen twice.
func scanStore(t *testing.T, s resourcelock.Store, partition string) map[resourcelock.Key]resourcelock.Item {
	t.Helper()
	seen := map[resourcelock.Key]resourcelock.Item{}
	err := s.Scan(ctx(t), partition, func(it resourcelock.Item, err error) error {
		if err != nil {
			t.Errorf("Scan(%q) passed %s with error %v", partition, it.Key, err)
			return nil
		}
		if _, dup := seen[it.Key]; dup {
			t.Errorf("Scan(%q) passed %s twice", partition, it.Key)
		}
		seen[it.Key] = it
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%q): %v", partition, err)
	}
	return seen
}

// wantScannedItems checks that got holds exactly the items of want.
func wantScannedItems(t *testing.T, what string, got, want map[resourcelock.Key]resourcelock.Item) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: row %s not seen", what, k)
			continue
		}
		if !sameStoreItem(g, w) {
			t.Errorf("%s: row %s:\n got  %s\n want %s", what, k, formatStoreItem(g), formatStoreItem(w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected row %s", what, k)
		}
	}
}

// fillStoreRows writes n rows of varied shapes and returns them as stored.
func fillStoreRows(t *testing.T, s resourcelock.Store, n int) map[resourcelock.Key]resourcelock.Item {
	t.Helper()
	rows := map[resourcelock.Key]resourcelock.Item{}
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	for i := range n {
		k := resourcelock.Key{Partition: fmt.Sprintf("row-%02d", i)}
		var opts resourcelock.WriteOptions
		if i%3 == 0 {
			opts.Attributes = map[string]types.AttributeValue{"index": &types.AttributeValueMemberN{Value: fmt.Sprint(i)}}
		}
		if i%4 == 0 {
			opts.Expires = expires
		}
		it := mustCreate(t, s, k, heldBy(fmt.Sprintf("holder-%d", i%5), time.Duration(i+1)*time.Second, strings.Repeat("d", i)), opts)
		if i%5 == 0 {
			it = mustUpdate(t, s, k, asHolder(it), releasedBy(it.HolderIdentity), opts)
		}
		rows[k] = it
	}
	return rows
}

func testStoreScanEmpty(t *testing.T, s resourcelock.Store) {
	if got := scanStore(t, s, ""); len(got) != 0 {
		t.Fatalf("Scan of an empty table passed %d rows", len(got))
	}
	if got := scanStore(t, s, "no-such-partition"); len(got) != 0 {
		t.Fatalf("Scan of a missing partition passed %d rows", len(got))
	}
}

func testStoreScanAll(t *testing.T, s resourcelock.Store) {
	rows := fillStoreRows(t, s, 30)
	wantScannedItems(t, "Scan of every row", scanStore(t, s, ""), rows)

	// Removed rows are gone from the scan.
	for k, it := range rows {
		if strings.HasSuffix(k.Partition, "7") {
			if err := s.Remove(ctx(t), k, asHolder(it)); err != nil {
				t.Fatalf("Remove %s: %v", k, err)
			}
			delete(rows, k)
		}
	}
	wantScannedItems(t, "Scan after removals", scanStore(t, s, ""), rows)
}

func testStoreScanPartition(t *testing.T, s resourcelock.Store) {
	rows := fillStoreRows(t, s, 6)
	for k, it := range rows {
		wantScannedItems(t, "Scan of partition "+k.Partition, scanStore(t, s, k.Partition),
			map[resourcelock.Key]resourcelock.Item{k: it})
	}
	if got := scanStore(t, s, "row-0"); len(got) != 0 {
		t.Fatalf("Scan of partition row-0, a prefix of others, passed %d rows, want none", len(got))
	}
}

func testStoreScanStops(t *testing.T, s resourcelock.Store) {
	fillStoreRows(t, s, 6)
	stop := errors.New("stop here")
	for _, tc := range []struct {
		partition string
		after     int
	}{{"", 1}, {"", 4}, {"row-03", 1}} {
		calls := 0
		err := s.Scan(ctx(t), tc.partition, func(resourcelock.Item, error) error {
			calls++
			if calls == tc.after {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) {
			t.Errorf("Scan(%q) whose fn fails on call %d returned %v, want fn's error", tc.partition, tc.after, err)
		}
		if calls != tc.after {
			t.Errorf("Scan(%q) called fn %d times, want it to stop after call %d failed", tc.partition, calls, tc.after)
		}
	}
}

func attributeMap(kv ...any) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return m
}

func testStoreAttributes(t *testing.T, s resourcelock.Store) {
	k := storeKey("attributes")
	app := attributeMap(
		"app", &types.AttributeValueMemberS{Value: "billing"},
		"count", &types.AttributeValueMemberN{Value: "42"},
		"blob", &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 255}},
		"flag", &types.AttributeValueMemberBOOL{Value: true},
		"list", &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberN{Value: "7"},
		}},
	)
	in := heldBy("a", time.Second, "")
	got, err := s.Create(ctx(t), k, in, resourcelock.WriteOptions{Attributes: app})
	if err != nil {
		t.Fatalf("Create with attributes: %v", err)
	}
	want := storedItem(k, in, 1)
	want.Attributes = app
	wantStoreItem(t, "Create with attributes", got, want)
	wantStoredItem(t, "after Create with attributes", s, k, want)
	wantScannedItems(t, "Scan after Create with attributes", scanStore(t, s, ""), map[resourcelock.Key]resourcelock.Item{k: want})

	// Writes that name no attributes leave them alone: a renewal, a
	// takeover, a release and a Create over the released row.
	cur := mustUpdate(t, s, k, asHolder(got), heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	cur = mustUpdate(t, s, k, asTakeover(cur), heldBy("b", time.Second, ""), resourcelock.WriteOptions{})
	cur = mustUpdate(t, s, k, asHolder(cur), releasedBy("b"), resourcelock.WriteOptions{})
	cur = mustCreate(t, s, k, heldBy("c", time.Second, ""), resourcelock.WriteOptions{})
	if !sameAttributeValues(cur.Attributes, app) {
		t.Fatalf("writes without attributes changed them: %s", formatStoreItem(cur))
	}

	// A write naming some attributes changes those and adds new ones.
	change := attributeMap(
		"count", &types.AttributeValueMemberN{Value: "43"},
		"extra", &types.AttributeValueMemberS{Value: "new"},
	)
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("c", time.Second, ""), resourcelock.WriteOptions{Attributes: change})
	want = cur
	want.Attributes = attributeMap(
		"app", app["app"], "blob", app["blob"], "flag", app["flag"], "list", app["list"],
		"count", change["count"], "extra", change["extra"],
	)
	wantStoreItem(t, "write naming two attributes", cur, want)
	wantScannedItems(t, "Scan after writes", scanStore(t, s, ""), map[resourcelock.Key]resourcelock.Item{k: want})

	// Attributes stay with their row.
	other := mustCreate(t, s, storeKey("other"), heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	if len(other.Attributes) != 0 {
		t.Fatalf("a new row has attributes it was not given: %s", formatStoreItem(other))
	}
}

// reservedStoreAttributes are the attribute names WriteOptions.Attributes
// may not use in a table of the shape RunStoreConformance asks for.
var reservedStoreAttributes = []string{
	resourcelock.DefaultPartitionKey, resourcelock.DefaultTTLAttribute,
	"ownerName", "recordVersionNumber", "leaseDuration", "data", "isReleased",
	"leaderTransitions", "acquireTime", "renewTime", "",
}

func testStoreReservedAttributes(t *testing.T, s resourcelock.Store) {
	k := storeKey("reserved")
	bad := func(name string) resourcelock.WriteOptions {
		return resourcelock.WriteOptions{Attributes: attributeMap(
			"fine", &types.AttributeValueMemberS{Value: "ok"},
			name, &types.AttributeValueMemberS{Value: "x"},
		)}
	}
	wantInvalid := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, resourcelock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
	}
	for _, name := range reservedStoreAttributes {
		_, err := s.Create(ctx(t), k, heldBy("a", time.Second, ""), bad(name))
		wantInvalid(fmt.Sprintf("Create with attribute %q", name), err)
	}
	_, err := s.Create(ctx(t), k, heldBy("a", time.Second, ""), resourcelock.WriteOptions{Attributes: map[string]types.AttributeValue{"nil": nil}})
	wantInvalid("Create with a nil attribute value", err)
	wantNoItem(t, "after Creates with reserved attributes", s, k)

	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), resourcelock.WriteOptions{})
	for _, name := range reservedStoreAttributes {
		_, err := s.Update(ctx(t), k, asHolder(first), heldBy("a", time.Second, ""), bad(name))
		wantInvalid(fmt.Sprintf("renewal with attribute %q", name), err)
		_, err = s.Update(ctx(t), k, asTakeover(first), heldBy("b", time.Second, ""), bad(name))
		wantInvalid(fmt.Sprintf("takeover with attribute %q", name), err)
	}
	wantStoredItem(t, "after Updates with reserved attributes", s, k, first)
}

func testStoreKeepData(t *testing.T, s resourcelock.Store) {
	k := storeKey("keep-data")
	keep := resourcelock.WriteOptions{KeepData: true}

	// Nothing stored, nothing kept.
	first := mustCreate(t, s, k, heldBy("a", time.Second, "ignored"), keep)
	if first.Data != nil {
		t.Fatalf("Create with KeepData on a missing row stored data %q, want none", first.Data)
	}
	cur := mustUpdate(t, s, k, asHolder(first), heldBy("a", time.Second, "d1"), resourcelock.WriteOptions{})
	wantData := func(what string, it resourcelock.Item, data string) {
		t.Helper()
		if !bytes.Equal(it.Data, []byte(data)) || (data == "" && it.Data != nil) {
			t.Fatalf("%s stored data %q, want %q", what, it.Data, data)
		}
	}
	wantData("renewal with data", cur, "d1")
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("a", 2*time.Second, "d2"), keep)
	wantData("renewal with KeepData and other data", cur, "d1")
	if cur.LeaseDuration != 2*time.Second {
		t.Fatalf("renewal with KeepData stored lease %v, want the rest of the record written", cur.LeaseDuration)
	}
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("a", time.Second, ""), keep)
	wantData("renewal with KeepData and no data", cur, "d1")
	cur = mustUpdate(t, s, k, asTakeover(cur), heldBy("b", time.Second, ""), keep)
	wantData("takeover with KeepData", cur, "d1")
	cur = mustUpdate(t, s, k, asHolder(cur), releasedBy("b"), keep)
	wantData("release with KeepData", cur, "d1")
	cur = mustCreate(t, s, k, heldBy("c", time.Second, "d3"), keep)
	wantData("Create over a released row with KeepData", cur, "d1")
	if cur.HolderIdentity != "c" || cur.Released || cur.LeaderTransitions != 3 {
		t.Fatalf("Create over a released row with KeepData stored %s", formatStoreItem(cur))
	}
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("c", time.Second, ""), resourcelock.WriteOptions{})
	wantData("renewal without KeepData and without data", cur, "")
}

func testStoreOnlyIfExists(t *testing.T, s resourcelock.Store) {
	k := storeKey("only-if-exists")
	only := resourcelock.WriteOptions{OnlyIfExists: true}
	_, err := s.Create(ctx(t), k, heldBy("a", time.Second, ""), only)
	wantConflict(t, "Create with OnlyIfExists on a missing row", err)
	wantNoItem(t, "after Create with OnlyIfExists on a missing row", s, k)

	first := mustCreate(t, s, k, heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	_, err = s.Create(ctx(t), k, heldBy("b", time.Second, ""), only)
	wantConflict(t, "Create with OnlyIfExists on a held row", err)
	wantStoredItem(t, "after Create with OnlyIfExists on a held row", s, k, first)

	mustUpdate(t, s, k, asHolder(first), releasedBy("a"), resourcelock.WriteOptions{})
	in := heldBy("b", time.Second, "b's")
	got, err := s.Create(ctx(t), k, in, only)
	if err != nil {
		t.Fatalf("Create with OnlyIfExists on a released row: %v", err)
	}
	wantStoreItem(t, "Create with OnlyIfExists on a released row", got, storedItem(k, in, 2))
	wantStoredItem(t, "after Create with OnlyIfExists on a released row", s, k, got)
}

func testStoreExpires(t *testing.T, s resourcelock.Store) {
	k := storeKey("expires")
	zone := time.FixedZone("UTC+3", 3*3600)
	whole := time.Now().Add(time.Hour).Truncate(time.Second).In(zone)
	for _, tc := range []struct {
		what      string
		at, wantd time.Time
	}{
		{"300ms past a second", whole.Add(300 * time.Millisecond), whole.Add(time.Second)},
		{"1ns past a second", whole.Add(time.Nanosecond), whole.Add(time.Second)},
		{"a whole second", whole, whole},
	} {
		in := heldBy("a", time.Second, "")
		opts := resourcelock.WriteOptions{Expires: tc.at}
		var got resourcelock.Item
		if cur, err := s.Get(ctx(t), k); errors.Is(err, resourcelock.ErrNotFound) {
			got = mustCreate(t, s, k, in, opts)
		} else {
			got = mustUpdate(t, s, k, asHolder(cur), in, opts)
		}
		if !got.Expires.Equal(tc.wantd) {
			t.Errorf("Expires %s (%s) stored as %v, want %v", tc.at, tc.what, got.Expires, tc.wantd)
		}
		if len(got.Attributes) != 0 {
			t.Errorf("Expires shows among the attributes: %s", formatStoreItem(got))
		}
		want := got
		wantScannedItems(t, "Scan with Expires", scanStore(t, s, ""), map[resourcelock.Key]resourcelock.Item{k: want})
	}
	got := mustUpdate(t, s, k, asHolder(mustGetItem(t, s, k)), heldBy("a", time.Second, ""), resourcelock.WriteOptions{})
	if !got.Expires.IsZero() {
		t.Fatalf("a renewal without Expires left it at %v", got.Expires)
	}
}

func testStoreExpiresRemoved(t *testing.T, s resourcelock.Store) {
	k := storeKey("expires-removed")
	exp := resourcelock.WriteOptions{Expires: time.Now().Add(time.Hour)}
	none := resourcelock.WriteOptions{}
	wantNone := func(what string, it resourcelock.Item) {
		t.Helper()
		if !it.Expires.IsZero() {
			t.Fatalf("%s without Expires left it at %v", what, it.Expires)
		}
	}
	wantSome := func(what string, it resourcelock.Item) {
		t.Helper()
		if it.Expires.IsZero() {
			t.Fatalf("%s with Expires stored none", what)
		}
	}
	cur := mustCreate(t, s, k, heldBy("a", time.Second, ""), exp)
	wantSome("Create", cur)
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("a", time.Second, ""), none)
	wantNone("renewal", cur)
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("a", time.Second, ""), exp)
	wantSome("renewal", cur)
	cur = mustUpdate(t, s, k, asTakeover(cur), heldBy("b", time.Second, ""), none)
	wantNone("takeover", cur)
	cur = mustUpdate(t, s, k, asHolder(cur), releasedBy("b"), exp)
	wantSome("release", cur)
	cur = mustCreate(t, s, k, heldBy("c", time.Second, ""), none)
	wantNone("Create over a released row", cur)
	cur = mustUpdate(t, s, k, asHolder(cur), releasedBy("c"), exp)
	wantSome("release", cur)
	cur = mustCreate(t, s, k, heldBy("d", time.Second, ""), resourcelock.WriteOptions{OnlyIfExists: true, KeepData: true})
	wantNone("Create with OnlyIfExists and KeepData", cur)
}

func testStoreIndependentKeys(t *testing.T, s resourcelock.Store) {
	ka, kb := storeKey("a"), storeKey("b")
	a := mustCreate(t, s, ka, heldBy("a", time.Second, "a's"), resourcelock.WriteOptions{})
	b := mustCreate(t, s, kb, heldBy("b", time.Second, "b's"), resourcelock.WriteOptions{})
	if a.LeaderTransitions != 1 || b.LeaderTransitions != 1 {
		t.Fatalf("first Creates of two keys stored %d and %d transitions, want 1 each", a.LeaderTransitions, b.LeaderTransitions)
	}

	// B's state admits no write to A.
	_, err := s.Update(ctx(t), ka, asTakeover(b), heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "takeover of A on B's RVN", err)
	_, err = s.Update(ctx(t), ka, asHolder(b), heldBy("b", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "renewal of A on B's RVN and holder", err)
	wantConflict(t, "Remove of A on B's RVN", s.Remove(ctx(t), ka, asHolder(b)))
	wantStoredItem(t, "A after writes on B's state", s, ka, a)

	// Writes to B leave A alone.
	rb := mustUpdate(t, s, kb, asHolder(b), releasedBy("b"), resourcelock.WriteOptions{})
	_, err = s.Create(ctx(t), ka, heldBy("x", time.Second, ""), resourcelock.WriteOptions{})
	wantConflict(t, "Create of A while only B is released", err)
	b2 := mustCreate(t, s, kb, heldBy("x", time.Second, ""), resourcelock.WriteOptions{Attributes: attributeMap("only-b", &types.AttributeValueMemberS{Value: "b"})})
	if b2.LeaderTransitions != rb.LeaderTransitions+1 {
		t.Fatalf("B's transitions went from %d to %d", rb.LeaderTransitions, b2.LeaderTransitions)
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
		_, err := s.Create(ctx(t), keys[i], heldBy(racerName(i), time.Second, ""), resourcelock.WriteOptions{})
		return err
	})
	if wins != racers {
		t.Fatalf("%d of %d concurrent Creates of distinct keys succeeded", wins, racers)
	}
	for i, k := range keys {
		if got := mustGetItem(t, s, k); got.HolderIdentity != racerName(i) || got.LeaderTransitions != 1 {
			t.Errorf("key %s holds %s, want holder %s with 1 transition", k, formatStoreItem(got), racerName(i))
		}
	}
	wantStoredItem(t, "A after concurrent Creates of other keys", s, ka, a)
}

func testStoreInvalidArguments(t *testing.T, s resourcelock.Store) {
	k := storeKey("invalid")
	valid := heldBy("a", time.Second, "")
	wantInvalid := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, resourcelock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
	}
	for what, bk := range map[string]resourcelock.Key{
		"an empty partition":      {},
		"a partition over 2048 B": {Partition: strings.Repeat("p", resourcelock.MaxNameBytes+1)},
		"a sort key value only":   {Sort: "s"},
	} {
		_, err := s.Get(ctx(t), bk)
		wantInvalid("Get with "+what, err)
		_, err = s.Create(ctx(t), bk, valid, resourcelock.WriteOptions{})
		wantInvalid("Create with "+what, err)
		_, err = s.Update(ctx(t), bk, resourcelock.Precondition{RVN: "r"}, valid, resourcelock.WriteOptions{})
		wantInvalid("Update with "+what, err)
		wantInvalid("Remove with "+what, s.Remove(ctx(t), bk, resourcelock.Precondition{RVN: "r"}))
	}

	bad := map[string]resourcelock.Record{
		"no holder (a Store has no identity to fill in)": {RVN: "r", LeaseDuration: time.Second},
		"no RVN":         {HolderIdentity: "a", LeaseDuration: time.Second},
		"zero lease":     {HolderIdentity: "a", RVN: "r"},
		"negative lease": {HolderIdentity: "a", RVN: "r", LeaseDuration: -time.Second},
		"data too large": {HolderIdentity: "a", RVN: "r", LeaseDuration: time.Second, Data: bytes.Repeat([]byte{1}, resourcelock.MaxDataBytes+1)},
	}
	for what, r := range bad {
		_, err := s.Create(ctx(t), k, r, resourcelock.WriteOptions{})
		wantInvalid("Create with "+what, err)
		_, err = s.Update(ctx(t), k, resourcelock.Precondition{RVN: "r"}, r, resourcelock.WriteOptions{})
		wantInvalid("Update with "+what, err)
	}
	_, err := s.Update(ctx(t), k, resourcelock.Precondition{Owner: "a"}, valid, resourcelock.WriteOptions{})
	wantInvalid("Update without precondition RVN", err)
	wantInvalid("Remove without precondition RVN", s.Remove(ctx(t), k, resourcelock.Precondition{Owner: "a"}))
	if got := scanStore(t, s, ""); len(got) != 0 {
		t.Fatalf("invalid writes stored %d rows", len(got))
	}

	// On an existing row too, nothing is written.
	first := mustCreate(t, s, k, valid, resourcelock.WriteOptions{})
	for what, r := range bad {
		_, err := s.Update(ctx(t), k, asTakeover(first), r, resourcelock.WriteOptions{})
		wantInvalid("takeover with "+what, err)
	}
	_, err = s.Update(ctx(t), k, resourcelock.Precondition{Owner: "a"}, valid, resourcelock.WriteOptions{})
	wantInvalid("Update without precondition RVN on an existing row", err)
	wantInvalid("Remove without precondition RVN on an existing row", s.Remove(ctx(t), k, resourcelock.Precondition{Owner: "a"}))
	wantStoredItem(t, "after invalid writes", s, k, first)
}

func testStoreConcurrentCreate(t *testing.T, s resourcelock.Store) {
	k := storeKey("concurrent-create")
	var mu sync.Mutex
	var winner resourcelock.Item
	wins := race(t, racers, func(i int) error {
		it, err := s.Create(ctx(t), k, heldBy(racerName(i), time.Second, ""), resourcelock.WriteOptions{})
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
	if winner.LeaderTransitions != 1 {
		t.Fatalf("the winning Create stored %d transitions, want 1", winner.LeaderTransitions)
	}
	wantStoredItem(t, "after concurrent Creates", s, k, winner)
}

func testStoreConcurrentTakeover(t *testing.T, s resourcelock.Store) {
	k := storeKey("concurrent-takeover")
	first := mustCreate(t, s, k, heldBy("old", time.Second, ""), resourcelock.WriteOptions{})
	var mu sync.Mutex
	var winner resourcelock.Item
	wins := race(t, racers, func(i int) error {
		it, err := s.Update(ctx(t), k, asTakeover(first), heldBy(racerName(i), time.Second, ""), resourcelock.WriteOptions{})
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
	if winner.LeaderTransitions != 2 {
		t.Fatalf("the winning takeover stored %d transitions, want 2", winner.LeaderTransitions)
	}
	wantStoredItem(t, "after concurrent takeovers", s, k, winner)
}

func testStoreDescribe(t *testing.T, s resourcelock.Store) {
	if s.Describe() == "" {
		t.Fatal("Describe() is empty")
	}
}
