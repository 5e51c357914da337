package rowstest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// testStoreNumbers checks WriteOptions.Numbers and Below: integers set
// with the record, kept by writes that do not name them, and a condition
// that admits a write only while each named integer is missing or below
// its bound, on every kind of write that takes a row.
func testStoreNumbers(t *testing.T, s rows.Store, vals attrValues) {
	k := storeKey("numbers")
	ledger := func(n int64) rows.WriteOptions {
		return rows.WriteOptions{Numbers: map[string]int64{"run": n}, Below: map[string]int64{"run": n}}
	}
	wantRun := func(what string, it rows.Item, n int64) {
		t.Helper()
		if got, ok := it.Numbers["run"]; !ok || got != n {
			t.Fatalf("%s: Numbers[run] = %d (present %v), want %d: %v", what, got, ok, n, it.Numbers)
		}
		if got := mustGetItem(t, s, k).Numbers["run"]; got != n {
			t.Fatalf("%s: the stored row has Numbers[run] = %d, want %d", what, got, n)
		}
	}
	wantRefused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, resourcelock.ErrConflict) {
			t.Fatalf("%s: %v, want a conflict", what, err)
		}
	}

	// A missing row has nothing to be below.
	cur := mustCreate(t, s, k, heldBy("a", time.Second, ""), ledger(5))
	wantRun("Create of a missing row", cur, 5)

	// A takeover needs every bound above the row's integer.
	_, err := s.Update(ctx(t), k, asTakeover(cur), heldBy("b", time.Second, ""), ledger(5))
	wantRefused("takeover below a bound equal to the row's", err)
	cur = mustUpdate(t, s, k, asTakeover(cur), heldBy("b", time.Second, ""), ledger(6))
	wantRun("takeover above the row's integer", cur, 6)

	// Writes that do not name it keep it: a renewal, a release. A
	// holder's own write ignores Below: it held when the row was taken.
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("b", time.Second, ""), rows.WriteOptions{})
	wantRun("renewal", cur, 6)
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("b", time.Second, ""), ledger(6))
	wantRun("renewal with the acquisition's ledger", cur, 6)
	cur = mustUpdate(t, s, k, asHolder(cur), releasedBy("b"), rows.WriteOptions{Numbers: map[string]int64{"done": 6}})
	wantRun("release", cur, 6)
	if cur.Numbers["done"] != 6 {
		t.Fatalf("release with Numbers[done]: %v", cur.Numbers)
	}

	// A Create over the released row is conditioned too, on every bound.
	_, err = s.Create(ctx(t), k, heldBy("c", time.Second, ""), ledger(6))
	wantRefused("Create over a released row, bound not above", err)
	twice := ledger(7)
	twice.Below["done"] = 6
	_, err = s.Create(ctx(t), k, heldBy("c", time.Second, ""), twice)
	wantRefused("Create over a released row, second bound not above", err)
	twice.Below["done"] = 7
	cur = mustCreate(t, s, k, heldBy("c", time.Second, ""), twice)
	wantRun("Create over a released row", cur, 7)

	// An attribute that is not an integer refuses the write.
	o := rows.WriteOptions{Attributes: attributeMap("app", vals[0])}
	cur = mustUpdate(t, s, k, asHolder(cur), heldBy("c", time.Second, ""), o)
	_, err = s.Update(ctx(t), k, asTakeover(cur), heldBy("d", time.Second, ""), rows.WriteOptions{Below: map[string]int64{"app": 1 << 62}})
	wantRefused("takeover below a bound on a string attribute", err)

	// Misuse is refused before any request.
	for what, o := range map[string]rows.WriteOptions{
		"a name in Attributes and Numbers": {Attributes: attributeMap("x", vals[0]), Numbers: map[string]int64{"x": 1}},
		"an empty name in Numbers":         {Numbers: map[string]int64{"": 1}},
		"an empty name in Below":           {Below: map[string]int64{"": 1}},
	} {
		_, err := s.Create(ctx(t), storeKey("numbers-invalid"), heldBy("a", time.Second, ""), o)
		if !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("Create with %s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
	wantNoItem(t, "after refused Creates", s, storeKey("numbers-invalid"))
}

// testStoreReservedNumbers checks that Numbers and Below refuse the names
// the store keeps, as Attributes does.
func testStoreReservedNumbers(t *testing.T, s rows.Store, reserved []string) {
	k := storeKey("reserved-numbers")
	for _, name := range reserved {
		for field, o := range map[string]rows.WriteOptions{
			"Numbers": {Numbers: map[string]int64{name: 1}},
			"Below":   {Below: map[string]int64{name: 1}},
		} {
			if _, err := s.Create(ctx(t), k, heldBy("a", time.Second, ""), o); !errors.Is(err, dynalease.ErrInvalid) {
				t.Errorf("Create with %s naming %q: %v, want dynalease.ErrInvalid", field, name, err)
			}
		}
	}
	wantNoItem(t, fmt.Sprintf("after Creates naming %v", reserved), s, k)
}
