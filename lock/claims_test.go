package lock

import (
	"testing"

	"github.com/dynalease/dynalease/resourcelock"
)

// TestClaimsTellKeysWithAndWithoutASortKeyApart: a key kept by its
// partition alone never meets a key with the same partition and a sort key.
func TestClaimsTellKeysWithAndWithoutASortKeyApart(t *testing.T) {
	m := newClaims()
	bare, sorted, other := resourcelock.Key{Partition: "a"}, resourcelock.Key{Partition: "a", Sort: "b"}, resourcelock.Key{Partition: "a", Sort: "c"}
	s1, s2 := &claim{}, &claim{}
	m.put(bare, s1)
	m.put(sorted, s2)
	if m.get(bare) != s1 || m.get(sorted) != s2 || m.get(other) != nil {
		t.Fatalf("get(bare), get(sorted), get(other) = %p, %p, %p; want %p, %p, nil", m.get(bare), m.get(sorted), m.get(other), s1, s2)
	}
	n := 0
	m.each(func(*claim) { n++ })
	if n != 2 {
		t.Fatalf("each saw %d claims, want 2", n)
	}
	m.remove(bare)
	if m.get(bare) != nil || m.get(sorted) != s2 {
		t.Fatal("removing the bare key touched the sorted one")
	}
	m.remove(sorted)
	if m.get(sorted) != nil {
		t.Fatal("the sorted key was not removed")
	}
}
