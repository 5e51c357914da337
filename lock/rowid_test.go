package lock

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

func TestParseRowIDTakesOnlyWhatItWritesBack(t *testing.T) {
	id := uuid.NewString()
	for s, want := range map[string]bool{
		id:                                     true,
		strings.ToUpper(id):                    false,
		"":                                     false,
		"rvn-1":                                false,
		"urn:uuid:" + id:                       false,
		"{" + id + "}":                         false,
		strings.ReplaceAll(id, "-", ""):        false,
		"00000000-0000-0000-0000-000000000000": true,
	} {
		u, ok := parseRowID(s)
		if ok != want {
			t.Errorf("parseRowID(%q) = %v, want %v", s, ok, want)
		}
		if ok && u.String() != s {
			t.Errorf("parseRowID(%q).String() = %q", s, u.String())
		}
	}
}

// TestALockKeepsAnyRVNAndAcquisitionID: a row whose IDs are not UUIDs in
// canonical form is written back with them unchanged, and so is one whose
// IDs are, whichever came first.
func TestALockKeepsAnyRVNAndAcquisitionID(t *testing.T) {
	c, err := NewFromStore(rows.MustOpen(memorystore.New()), WithOwnerName("owner"))
	if err != nil {
		t.Fatal(err)
	}
	l := &Lock{c: c}
	id, id2 := uuid.NewString(), uuid.NewString()
	for _, ids := range [][2]string{{"rvn-1", ""}, {id, id}, {"RVN-" + id, id}, {id2, "acq"}, {id2, id}} {
		l.mu.Lock()
		l.keepLocked(rows.Item{Record: resourcelock.Record{RVN: ids[0], AcquisitionID: ids[1]}})
		it := l.itemLocked()
		l.mu.Unlock()
		if it.RVN != ids[0] || it.AcquisitionID != ids[1] {
			t.Fatalf("kept RVN %q and acquisition ID %q, wrote back %q and %q", ids[0], ids[1], it.RVN, it.AcquisitionID)
		}
		if got := l.RVN(); got != ids[0] {
			t.Fatalf("RVN() = %q, want %q", got, ids[0])
		}
	}
}

// TestALockFitsItsAllocation pins the size of a Lock at the 192-byte size
// class of Go's allocator: thousands of held locks each cost one.
func TestALockFitsItsAllocation(t *testing.T) {
	if got := unsafe.Sizeof(Lock{}); got > 192 {
		t.Fatalf("a Lock is %d bytes, over the 192-byte size class", got)
	}
}
