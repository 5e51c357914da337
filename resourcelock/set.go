package resourcelock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Set is several rows of a ManyStore seen as one lease, so that the one
// engine that acquires, holds and releases a lease on one row does the same
// on a set of rows: all of them or none, never some.
//
// # How the rows fold into one lease
//
// Get reads every member row in one snapshot (GetMany) and folds them into
// one Item:
//   - Every member present with one holder, one RVN and one acquisition,
//     all held or all released, as a write of a Set leaves them: that
//     record, with that RVN. Only such a set is held by anybody as a whole.
//   - Otherwise its RVN is a composite of every member's state (missing, or
//     its RVN and whether released), which changes whenever any member's
//     does, since RVNs are never reused. It is held, with the longest
//     lease of the held members, by the holder of the first member held
//     by somebody else than this Set's last write; and released when
//     there is none (every member missing or released, or, for the Set
//     that holds them, carrying its own last write), naming the holder
//     of the first member that does not carry its last write (who
//     released it). Departed names that member.
//   - Every member missing: ErrNotFound.
//
// Writes go to every member in one WriteMany, conditioned member by member
// on the state the expected RVN names: a plain RVN on every member
// carrying it (with the holder, when the precondition names one); a
// composite on each member's own RVN, or on the member being missing or
// released where it was missing. Create conditions every member on being
// missing or released.
//
// # Why that is safe
//
// A waiter takes a set over only after watching the set's RVN unchanged
// for the set's lease on its own clock (the engine's rule for one row).
// An unchanged composite means that no member changed since it was first
// read, and the set's lease is at least each held member's own lease, so
// each member was watched unchanged for at least its holder's lease: the
// rule for one row, member by member. The takeover is one WriteMany
// conditioned on each member's RVN as watched, so it lands only if no
// member changed since, and then on all members at once. A holder's
// renewal and release are conditioned on its RVN on every member, so they
// land only while it still holds them all; a member taken by another (an
// AWS Java client taking over one row, a forced release) makes the set
// lost to its holder, who stops at its validity like any holder.
//
// # What is not kept
//
// A Set carries no data and no attributes; its rows' queues are left as
// they are, and nobody waiting for a set queues on them. Its fencing
// token is the one Fence gives every member alike (a set acquired without
// Fence has none: LeaderTransitions and FenceGeneration are zero). Writes of a Set return the record written, not the rows read back
// (a transaction returns none): the acquisition ID is the acquiring
// write's RVN, kept by the Set for its later writes.
type Set struct {
	store ManyStore
	keys  []Key
	key   Key

	mu            sync.Mutex
	acquisitionID string // of the last acquisition seen or written
	mine          string // the RVN of this Set's last write that landed
	departed      Key    // see Departed
	// The fencing token of the current acquisition, once FenceMany gave
	// it: a holder's writes leave it on the rows.
	generation, transitions int64
}

// compositeMark starts a composite RVN; a member RVN that starts with it is
// refused as invalid, so that a plain RVN is never read as a composite.
const compositeMark = "\x00set"

// NewSet returns the set of rows at keys of store, sorted and without
// duplicates. It checks the keys against the store's MaxMany and sends no
// request.
func NewSet(store ManyStore, keys []Key) (*Set, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: store is nil", ErrInvalidArgument)
	}
	keys = slices.Clone(keys)
	slices.SortFunc(keys, compareKeys)
	keys = slices.Compact(keys)
	if err := CheckMany(keys, store.MaxMany()); err != nil {
		return nil, err
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
	}
	return &Set{store: store, keys: keys, key: Key{Partition: strings.Join(names, ",")}}, nil
}

func compareKeys(a, b Key) int {
	if c := strings.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	return strings.Compare(a.Sort, b.Sort)
}

// Keys returns the members, sorted.
func (s *Set) Keys() []Key { return slices.Clone(s.keys) }

// Key returns the set's name as a Key: the members' names joined by
// commas, in order. It names no row.
func (s *Set) Key() Key { return s.key }

// Store returns the store the members are in.
func (s *Set) Store() ManyStore { return s.store }

// Get reads every member in one snapshot and returns them folded into one
// item, or an error wrapping ErrNotFound when every member is missing.
func (s *Set) Get(ctx context.Context) (Item, error) {
	rows, err := s.store.GetMany(ctx, s.keys)
	if err != nil {
		return Item{}, err
	}
	it, err := s.fold(rows)
	if err != nil {
		return Item{}, err
	}
	if !it.Released && it.AcquisitionID != "" {
		s.mu.Lock()
		s.acquisitionID = it.AcquisitionID
		s.mu.Unlock()
	}
	return it, nil
}

// Members returns the member rows as last read by GetMany, for callers
// that show them (a missing member is absent).
func (s *Set) Members(ctx context.Context) (map[Key]Item, error) {
	return s.store.GetMany(ctx, s.keys)
}

// fold folds the member rows into one item (see Set).
func (s *Set) fold(rows map[Key]Item) (Item, error) {
	if len(rows) == 0 {
		return Item{}, fmt.Errorf("%s: %w", s.key, ErrNotFound)
	}
	for _, r := range rows {
		if strings.HasPrefix(r.RVN, compositeMark) {
			return Item{}, fmt.Errorf("%w: %s: RVN starts with a NUL byte", ErrInvalidRecord, r.Key)
		}
	}
	first := rows[s.keys[0]]
	if len(rows) == len(s.keys) {
		uniform := true
		for _, k := range s.keys[1:] {
			r := rows[k]
			if r.Released != first.Released || r.RVN != first.RVN || r.HolderIdentity != first.HolderIdentity || r.AcquisitionID != first.AcquisitionID {
				uniform = false
				break
			}
		}
		if uniform {
			s.mu.Lock()
			s.departed = Key{}
			s.mu.Unlock()
			rec := first.Record
			rec.Data = nil
			for _, k := range s.keys[1:] {
				if r := rows[k]; r.FenceGeneration != first.FenceGeneration || r.LeaderTransitions != first.LeaderTransitions {
					// No one token on every row: none for the set.
					rec.LeaderTransitions, rec.FenceGeneration = 0, 0
					break
				}
			}
			return Item{Key: s.key, Record: rec}, nil
		}
	}
	s.mu.Lock()
	mine := s.mine
	s.mu.Unlock()
	var b strings.Builder
	b.WriteString(compositeMark)
	rec := Record{Released: true}
	departed, found := Key{}, false
	for _, k := range s.keys {
		b.WriteByte(0)
		r, ok := rows[k]
		held := ok && !r.Released && (mine == "" || r.RVN != mine)
		if !found && (!ok || r.Released || mine == "" || r.RVN != mine) && (held || mine != "") {
			// The first member held by another or, for the holder, the
			// first one that left its last write.
			departed, found = k, true
			rec.HolderIdentity = r.HolderIdentity
		}
		switch {
		case !ok:
			b.WriteByte('-')
			continue
		case r.Released:
			b.WriteByte('~')
		default:
			b.WriteByte('=')
		}
		if held {
			if rec.Released {
				rec.Released, rec.HolderIdentity = false, r.HolderIdentity
				rec.AcquireTime, rec.RenewTime = r.AcquireTime, r.RenewTime
			}
			rec.LeaseDuration = max(rec.LeaseDuration, r.LeaseDuration)
		}
		b.WriteString(r.RVN)
	}
	rec.RVN = b.String()
	s.mu.Lock()
	s.departed = departed
	s.mu.Unlock()
	return Item{Key: s.key, Record: rec}, nil
}

// Departed returns the member that the last Get found not held as a whole
// with the others: the first one held by somebody else or, for the Set
// that wrote the members last, the first one that no longer carries that
// write (taken, released or deleted by another). It returns false when
// the last Get found the set whole, free, or missing.
func (s *Set) Departed() (Key, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.departed, s.departed != Key{}
}

// expectations returns, member by member, the write that the state named by
// rvn calls for: for a composite, a WriteUpdate on each present member's
// RVN and a WriteCreate where it was missing; for a plain RVN, a
// WriteUpdate on it everywhere, with holder when not empty.
func (s *Set) expectations(rvn, holder string) ([]Write, error) {
	writes := make([]Write, len(s.keys))
	if !strings.HasPrefix(rvn, compositeMark) {
		for i, k := range s.keys {
			writes[i] = Write{Key: k, Kind: WriteUpdate, Expect: Precondition{RVN: rvn, HolderIdentity: holder}}
		}
		return writes, nil
	}
	parts := strings.Split(rvn[len(compositeMark):], "\x00")
	if len(parts) != len(s.keys)+1 || parts[0] != "" {
		return nil, fmt.Errorf("%w: %s: the expected RVN is a composite of another set", ErrInvalidArgument, s.key)
	}
	for i, k := range s.keys {
		p := parts[i+1]
		switch {
		case p == "-":
			writes[i] = Write{Key: k, Kind: WriteCreate}
		case len(p) > 1 && (p[0] == '=' || p[0] == '~'):
			writes[i] = Write{Key: k, Kind: WriteUpdate, Expect: Precondition{RVN: p[1:], HolderIdentity: holder}}
		default:
			return nil, fmt.Errorf("%w: %s: malformed composite RVN", ErrInvalidArgument, s.key)
		}
	}
	return writes, nil
}

// Create writes rec on every member when each is missing or released.
func (s *Set) Create(ctx context.Context, rec Record, opts WriteOptions) (Item, error) {
	writes := make([]Write, len(s.keys))
	for i, k := range s.keys {
		writes[i] = Write{Key: k, Kind: WriteCreate}
	}
	return s.write(ctx, writes, rec, opts, true)
}

// Update writes rec on every member when the set is in the state expect
// names (see Set).
func (s *Set) Update(ctx context.Context, expect Precondition, rec Record, opts WriteOptions) (Item, error) {
	if err := CheckPrecondition(expect); err != nil {
		return Item{}, err
	}
	writes, err := s.expectations(expect.RVN, expect.HolderIdentity)
	if err != nil {
		return Item{}, err
	}
	return s.write(ctx, writes, rec, opts, expect.HolderIdentity == "")
}

// Remove deletes every member when the set is in the state expect names; a
// member that was missing must still be missing or released, and is left
// as it is.
func (s *Set) Remove(ctx context.Context, expect Precondition) error {
	if err := CheckPrecondition(expect); err != nil {
		return err
	}
	writes, err := s.expectations(expect.RVN, expect.HolderIdentity)
	if err != nil {
		return err
	}
	for i := range writes {
		if writes[i].Kind == WriteUpdate {
			writes[i].Kind = WriteRemove
		}
	}
	return s.store.WriteMany(ctx, writes)
}

// Fence gives every member one new fencing generation (see
// ManyStore.FenceMany), so that the set's token, carried by every member,
// is higher than every token any member carried before, and lower than
// the token of any later acquisition of any member. It returns the set
// as fenced.
func (s *Set) Fence(ctx context.Context, holder, acquisitionID string) (Item, error) {
	gen, err := s.store.FenceMany(ctx, s.keys, holder, acquisitionID)
	if err != nil {
		return Item{}, err
	}
	it, err := s.Get(ctx)
	if err != nil {
		return Item{}, fmt.Errorf("%s: fenced, but reading the set back failed: %w", s.key, err)
	}
	if it.FenceGeneration != gen || it.LeaderTransitions != 2 || it.AcquisitionID != acquisitionID {
		return Item{}, fmt.Errorf("%s: fence: %w: the set changed after it was fenced", s.key, ErrConflict)
	}
	s.mu.Lock()
	s.generation, s.transitions = gen, 2
	s.mu.Unlock()
	return it, nil
}

// write sends writes, each carrying rec and opts, and returns the set as
// written.
func (s *Set) write(ctx context.Context, writes []Write, rec Record, opts WriteOptions, acquiring bool) (Item, error) {
	rec, opts, err := PrepareWrite(s.keys[0], rec, opts)
	if err != nil {
		return Item{}, err
	}
	for i := range writes {
		writes[i].Record, writes[i].Options = rec, opts
	}
	if err := s.store.WriteMany(ctx, writes); err != nil {
		return Item{}, err
	}
	out := rec
	out.Data = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case rec.HandedTo != "":
		s.acquisitionID = ""
		s.generation, s.transitions = 0, 0
	case acquiring:
		s.acquisitionID = rec.RVN
		s.generation, s.transitions = 0, 0
	}
	out.AcquisitionID = s.acquisitionID
	out.LeaderTransitions, out.FenceGeneration = s.transitions, s.generation
	s.mine = rec.RVN
	return Item{Key: s.key, Record: out}, nil
}
