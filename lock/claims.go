package lock

import "github.com/dynalease/dynalease/resourcelock"

// claims maps keys to this client's claims on them (see claim). Keys
// without a sort key, most of them, are kept by their partition value
// alone: a map slot of 24 bytes rather than 40, in a map with a slot for
// each of thousands of held locks. The zero value is not ready: use
// newClaims.
type claims struct {
	bare   map[string]*claim           // keys without a sort key, by partition
	sorted map[resourcelock.Key]*claim // keys with one
}

func newClaims() claims {
	return claims{bare: map[string]*claim{}, sorted: map[resourcelock.Key]*claim{}}
}

// get returns the claim on k, nil for none.
func (m claims) get(k resourcelock.Key) *claim {
	if k.Sort == "" {
		return m.bare[k.Partition]
	}
	return m.sorted[k]
}

// put makes s the claim on k.
func (m claims) put(k resourcelock.Key, s *claim) {
	if k.Sort == "" {
		m.bare[k.Partition] = s
	} else {
		m.sorted[k] = s
	}
}

// remove forgets the claim on k.
func (m claims) remove(k resourcelock.Key) {
	if k.Sort == "" {
		delete(m.bare, k.Partition)
	} else {
		delete(m.sorted, k)
	}
}

// each calls f with every claim.
func (m claims) each(f func(*claim)) {
	for _, s := range m.bare {
		f(s)
	}
	for _, s := range m.sorted {
		f(s)
	}
}
