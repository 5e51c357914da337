package rowstest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// scanStore collects what Scan passes to fn, failing on any error and on a
// key seen twice.
func scanStore(t *testing.T, s rows.Store, partition string) map[resourcelock.Key]rows.Item {
	t.Helper()
	seen := map[resourcelock.Key]rows.Item{}
	err := s.Scan(ctx(t), partition, func(it rows.Item, err error) error {
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
func wantScannedItems(t *testing.T, what string, got, want map[resourcelock.Key]rows.Item) {
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
func fillStoreRows(t *testing.T, s rows.Store, n int, vals attrValues) map[resourcelock.Key]rows.Item {
	t.Helper()
	found := map[resourcelock.Key]rows.Item{}
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	for i := range n {
		k := resourcelock.Key{Partition: fmt.Sprintf("row-%02d", i)}
		var opts rows.WriteOptions
		if i%3 == 0 {
			opts.Attributes = map[string]any{"index": vals[i%len(vals)]}
		}
		if i%4 == 0 {
			opts.Expires = expires
		}
		it := mustCreate(t, s, k, heldBy(fmt.Sprintf("holder-%d", i%5), time.Duration(i+1)*time.Second, strings.Repeat("d", i)), opts)
		if i%5 == 0 {
			it = mustUpdate(t, s, k, asHolder(it), releasedBy(it.HolderIdentity), opts)
		}
		found[k] = it
	}
	return found
}

func testStoreScanEmpty(t *testing.T, s rows.Store) {
	if got := scanStore(t, s, ""); len(got) != 0 {
		t.Fatalf("Scan of an empty table passed %d found", len(got))
	}
	if got := scanStore(t, s, "no-such-partition"); len(got) != 0 {
		t.Fatalf("Scan of a missing partition passed %d found", len(got))
	}
}

func testStoreScanAll(t *testing.T, s rows.Store, vals attrValues) {
	found := fillStoreRows(t, s, 30, vals)
	wantScannedItems(t, "Scan of every row", scanStore(t, s, ""), found)

	// Removed rows are gone from the scan.
	for k, it := range found {
		if strings.HasSuffix(k.Partition, "7") {
			if err := s.Remove(ctx(t), k, asHolder(it)); err != nil {
				t.Fatalf("Remove %s: %v", k, err)
			}
			delete(found, k)
		}
	}
	wantScannedItems(t, "Scan after removals", scanStore(t, s, ""), found)
}

func testStoreScanPartition(t *testing.T, s rows.Store, vals attrValues) {
	found := fillStoreRows(t, s, 6, vals)
	for k, it := range found {
		wantScannedItems(t, "Scan of partition "+k.Partition, scanStore(t, s, k.Partition),
			map[resourcelock.Key]rows.Item{k: it})
	}
	if got := scanStore(t, s, "row-0"); len(got) != 0 {
		t.Fatalf("Scan of partition row-0, a prefix of others, passed %d found, want none", len(got))
	}
}

func testStoreScanStops(t *testing.T, s rows.Store, vals attrValues) {
	fillStoreRows(t, s, 6, vals)
	stop := errors.New("stop here")
	for _, tc := range []struct {
		partition string
		after     int
	}{{"", 1}, {"", 4}, {"row-03", 1}} {
		calls := 0
		err := s.Scan(ctx(t), tc.partition, func(rows.Item, error) error {
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
