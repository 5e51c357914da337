package rowstest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// attrValues are the suite's sample attribute values.
type attrValues []any

func attributeMap(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func testStoreAttributes(t *testing.T, s rows.Store, vals attrValues) {
	k := storeKey("attributes")
	app := attributeMap("app", vals[0], "count", vals[1], "blob", vals[2], "flag", vals[3], "list", vals[4])
	in := heldBy("a", time.Second, "")
	got, err := s.Create(ctx(t), k, in, rows.WriteOptions{Attributes: app})
	if err != nil {
		t.Fatalf("Create with attributes: %v", err)
	}
	want := storedItem(k, in, 1)
	want.Attributes = app
	wantStoreItem(t, "Create with attributes", got, want)
	wantStoredItem(t, "after Create with attributes", s, k, want)
	wantScannedItems(t, "Scan after Create with attributes", scanStore(t, s, ""), map[resourcelock.Key]rows.Item{k: want})

	// Writes that name no attributes leave them alone: a renewal, a
	// takeover, a release and a Create over the released row.
	cur := mustUpdate(t, s, k, asHolder(got), heldBy("a", time.Second, ""), rows.WriteOptions{})
	cur = mustUpdate(t, s, k, asTakeover(cur), heldBy("b", time.Second, ""), rows.WriteOptions{})
	mustUpdate(t, s, k, asHolder(cur), releasedBy("b"), rows.WriteOptions{})
	cur = mustCreate(t, s, k, heldBy("c", time.Second, ""), rows.WriteOptions{})
	if !sameAttributeValues(cur.Attributes, app) {
		t.Fatalf("writes without attributes changed them: %s", formatStoreItem(cur))
	}

	// A write naming some attributes changes those and adds new ones.
	change := attributeMap("count", vals[5], "extra", vals[6])
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("c", time.Second, ""), rows.WriteOptions{Attributes: change})
	want = cur
	want.Attributes = attributeMap(
		"app", app["app"], "blob", app["blob"], "flag", app["flag"], "list", app["list"],
		"count", change["count"], "extra", change["extra"],
	)
	wantStoreItem(t, "write naming two attributes", cur, want)
	wantScannedItems(t, "Scan after writes", scanStore(t, s, ""), map[resourcelock.Key]rows.Item{k: want})

	// Attributes stay with their row.
	other := mustCreate(t, s, storeKey("other"), heldBy("a", time.Second, ""), rows.WriteOptions{})
	if len(other.Attributes) != 0 {
		t.Fatalf("a new row has attributes it was not given: %s", formatStoreItem(other))
	}
}

func testStoreReservedAttributes(t *testing.T, s rows.Store, reserved []string, vals attrValues) {
	reserved = append([]string{""}, reserved...)
	k := storeKey("reserved")
	bad := func(name string) rows.WriteOptions {
		return rows.WriteOptions{Attributes: attributeMap("fine", vals[0], name, vals[1])}
	}
	wantInvalid := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("%s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
	for _, name := range reserved {
		_, err := s.Create(ctx(t), k, heldBy("a", time.Second, ""), bad(name))
		wantInvalid(fmt.Sprintf("Create with attribute %q", name), err)
	}
	_, err := s.Create(ctx(t), k, heldBy("a", time.Second, ""), rows.WriteOptions{Attributes: map[string]any{"nil": nil}})
	wantInvalid("Create with a nil attribute value", err)
	wantNoItem(t, "after Creates with reserved attributes", s, k)

	first := mustCreate(t, s, k, heldBy("a", time.Second, "a's"), rows.WriteOptions{})
	for _, name := range reserved {
		_, err := s.Update(ctx(t), k, asHolder(first), heldBy("a", time.Second, ""), bad(name))
		wantInvalid(fmt.Sprintf("renewal with attribute %q", name), err)
		_, err = s.Update(ctx(t), k, asTakeover(first), heldBy("b", time.Second, ""), bad(name))
		wantInvalid(fmt.Sprintf("takeover with attribute %q", name), err)
	}
	wantStoredItem(t, "after Updates with reserved attributes", s, k, first)
}

func testStoreKeepData(t *testing.T, s rows.Store) {
	k := storeKey("keep-data")
	keep := rows.WriteOptions{KeepData: true}

	// Nothing stored, nothing kept.
	first := mustCreate(t, s, k, heldBy("a", time.Second, "ignored"), keep)
	if first.Data != nil {
		t.Fatalf("Create with KeepData on a missing row stored data %q, want none", first.Data)
	}
	cur := mustUpdate(t, s, k, asHolder(first), heldBy("a", time.Second, "d1"), rows.WriteOptions{})
	wantData := func(what string, it rows.Item, data string) {
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
	if cur.HolderIdentity != "c" || cur.Released || cur.Acquisitions != 3 {
		t.Fatalf("Create over a released row with KeepData stored %s", formatStoreItem(cur))
	}
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("c", time.Second, ""), rows.WriteOptions{})
	wantData("renewal without KeepData and without data", cur, "")
}

func testStoreOnlyIfExists(t *testing.T, s rows.Store) {
	k := storeKey("only-if-exists")
	only := rows.WriteOptions{OnlyIfExists: true}
	_, err := s.Create(ctx(t), k, heldBy("a", time.Second, ""), only)
	wantConflict(t, "Create with OnlyIfExists on a missing row", err)
	wantNoItem(t, "after Create with OnlyIfExists on a missing row", s, k)

	first := mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{})
	_, err = s.Create(ctx(t), k, heldBy("b", time.Second, ""), only)
	wantConflict(t, "Create with OnlyIfExists on a held row", err)
	wantStoredItem(t, "after Create with OnlyIfExists on a held row", s, k, first)

	mustUpdate(t, s, k, asHolder(first), releasedBy("a"), rows.WriteOptions{})
	in := heldBy("b", time.Second, "b's")
	got, err := s.Create(ctx(t), k, in, only)
	if err != nil {
		t.Fatalf("Create with OnlyIfExists on a released row: %v", err)
	}
	wantStoreItem(t, "Create with OnlyIfExists on a released row", got, storedItem(k, in, 2))
	wantStoredItem(t, "after Create with OnlyIfExists on a released row", s, k, got)
}

func testStoreExpires(t *testing.T, s rows.Store) {
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
		opts := rows.WriteOptions{Expires: tc.at}
		var got rows.Item
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
		wantScannedItems(t, "Scan with Expires", scanStore(t, s, ""), map[resourcelock.Key]rows.Item{k: want})
	}
	got := mustUpdate(t, s, k, asHolder(mustGetItem(t, s, k)), heldBy("a", time.Second, ""), rows.WriteOptions{})
	if !got.Expires.IsZero() {
		t.Fatalf("a renewal without Expires left it at %v", got.Expires)
	}
}

func testStoreExpiresRemoved(t *testing.T, s rows.Store) {
	k := storeKey("expires-removed")
	exp := rows.WriteOptions{Expires: time.Now().Add(time.Hour)}
	none := rows.WriteOptions{}
	wantNone := func(what string, it rows.Item) {
		t.Helper()
		if !it.Expires.IsZero() {
			t.Fatalf("%s without Expires left it at %v", what, it.Expires)
		}
	}
	wantSome := func(what string, it rows.Item) {
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
	cur = mustCreate(t, s, k, heldBy("d", time.Second, ""), rows.WriteOptions{OnlyIfExists: true, KeepData: true})
	wantNone("Create with OnlyIfExists and KeepData", cur)
}

// KeepTTL leaves the row's TTL as the write it replaces left it.
func testStoreKeepTTL(t *testing.T, s rows.Store) {
	k := storeKey("keep-ttl")
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	cur := mustCreate(t, s, k, heldBy("a", time.Second, ""), rows.WriteOptions{Expires: at})
	mustUpdate(t, s, k, asHolder(cur), heldBy("a", time.Second, ""), rows.WriteOptions{KeepTTL: true})
	if got := mustGetItem(t, s, k).Expires; !got.Equal(at) {
		t.Fatalf("a write with KeepTTL left the TTL at %v, want %v", got, at)
	}
}
