package rowstest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

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
func storedItem(k resourcelock.Key, r resourcelock.Record, transitions int64) rows.Item {
	r.Acquisitions = transitions
	r.AcquisitionID = r.RVN // as an acquiring write stores it
	return rows.Item{Key: k, Record: r}
}

// asHolder returns the holder's precondition on it: its RVN and holder.
func asHolder(it rows.Item) resourcelock.Precondition {
	return resourcelock.Precondition{RVN: it.RVN, HolderIdentity: it.HolderIdentity}
}

// asTakeover returns a takeover's precondition on it: its RVN alone.
func asTakeover(it rows.Item) resourcelock.Precondition {
	return resourcelock.Precondition{RVN: it.RVN}
}

// sameStoreItem reports whether a and b hold the same values. Nil and empty
// attribute maps are the same.
func sameStoreItem(a, b rows.Item) bool {
	return a.Key == b.Key && record.Equal(a.Record, b.Record) && a.Expires.Equal(b.Expires) &&
		sameAttributeValues(a.Attributes, b.Attributes) && slices.Equal(a.Queue, b.Queue) &&
		slices.Equal(a.Readers, b.Readers) && slices.Equal(a.Candidates, b.Candidates)
}

func sameAttributeValues(a, b map[string]any) bool {
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
func formatStoreItem(it rows.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{Key:%q Record:%+v", it.Key.String(), it.Record)
	if !it.Expires.IsZero() {
		fmt.Fprintf(&b, " Expires:%s", it.Expires.UTC().Format(time.RFC3339Nano))
	}
	if len(it.Queue) > 0 {
		fmt.Fprintf(&b, " Queue:%+v", it.Queue)
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

func formatAttributeValue(v any) string {
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T%+v", v, v)
}

func wantStoreItem(t *testing.T, what string, got, want rows.Item) {
	t.Helper()
	if !sameStoreItem(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, formatStoreItem(got), formatStoreItem(want))
	}
}

// mustGetItem reads k, which must exist.
func mustGetItem(t *testing.T, s rows.Store, k resourcelock.Key) rows.Item {
	t.Helper()
	it, err := s.Get(ctx(t), k)
	if err != nil {
		t.Fatalf("Get %s: %v", k, err)
	}
	return it
}

// wantStoredItem checks that a Get of k returns want.
func wantStoredItem(t *testing.T, what string, s rows.Store, k resourcelock.Key, want rows.Item) {
	t.Helper()
	wantStoreItem(t, what+" (Get)", mustGetItem(t, s, k), want)
}

func wantNoItem(t *testing.T, what string, s rows.Store, k resourcelock.Key) {
	t.Helper()
	if it, err := s.Get(ctx(t), k); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("%s: Get %s = %s, %v; want ErrNotFound", what, k, formatStoreItem(it), err)
	}
}

// mustCreate writes r at k, which must succeed, and checks that the result is
// what a Get returns.
func mustCreate(t *testing.T, s rows.Store, k resourcelock.Key, r resourcelock.Record, opts rows.WriteOptions) rows.Item {
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
func mustUpdate(t *testing.T, s rows.Store, k resourcelock.Key, expect resourcelock.Precondition, r resourcelock.Record, opts rows.WriteOptions) rows.Item {
	t.Helper()
	it, err := s.Update(ctx(t), k, expect, r, opts)
	if err != nil {
		t.Fatalf("Update %s on %+v: %v", k, expect, err)
	}
	wantStoredItem(t, "after Update "+k.String(), s, k, it)
	return it
}
