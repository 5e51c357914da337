package setlease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Set is several rows of a store seen as one lease, so that the one
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
//   - Otherwise its RVN is a composite: the RVN of each held member, and a
//     mark for each free one (missing or released). It changes whenever a
//     held member changes or a free one becomes held, since RVNs are never
//     reused; a free member that stays free, however often others take
//     and free it meanwhile, leaves it as it is. It is released when every
//     member is free; otherwise held, for the longest lease of the held
//     members, by the holder of the first member held by somebody other
//     than this Set. Departure names the member that keeps the set from
//     being whole, and how (taken, released, deleted).
//   - Every member missing: ErrNotFound.
//
// A Set tells its own writes by their RVNs, which it remembers from the
// moment it sends them: a row carrying one was written by this Set,
// whether or not the answer came back.
//
// Writes go to every member in one WriteMany, conditioned member by member
// on the state the expected RVN names: a plain RVN on every member
// carrying it (with the holder, when the precondition names one); a
// composite, which only a takeover may expect, on each held member's RVN
// and on each free member being missing or released. Create conditions
// every member on being missing or released (whatever its queue: see
// Create).
//
// # Why that is safe
//
// A waiter takes a set over only after watching the set's RVN unchanged
// for the set's lease on its own clock (the engine's rule for one row).
// An unchanged composite means that no held member changed since it was
// first read, and the set's lease is at least each held member's own
// lease, so each held member was watched unchanged for at least its
// holder's lease: the rule for one row, member by member. A free member
// may be taken at once, as a free row may. The takeover is one WriteMany
// conditioned on each held member's RVN as watched and on each free
// member still being free, so it lands only if that is still so, and then
// on all members at once. A holder's renewal and release are conditioned
// on its RVN on every member, so they land only while it still holds them
// all; a member taken by another (an AWS Java client taking over one row,
// a forced release) makes the set lost to its holder, who stops at its
// validity like any holder.
//
// # Waiting in a queue
//
// A set's queue is the queue of its first member (in key order). A waiter
// for the set joins it (Join), and the folded Item carries it as its
// Queue, so that the engine's fair waiting works on a set as on one row:
// waiters for sets with the same first key, and waiters for that key
// alone, are served about in the order they joined. The other members'
// queues are left as they are. A set at the head of the queue that waits
// for another member does not move meanwhile: once the first member's
// holder (or a hand-over to the set) has stayed unchanged for its lease,
// the waiter behind may take it over, taking the set's entry out with its
// own as it would a dead waiter's, and the set joins again at the end (the
// engine joins at most three times a wait, then waits without a place).
//
// A holder's release that finds waiters in that queue (UpdateDequeue with
// a record naming HandedTo) hands the first member to the queue's head,
// naming it holder with its lease and ticket, and marks the other members
// released, in one WriteMany. The head may want other keys than the
// releaser held: it takes them as it takes any free key.
//
// The fold tells a member handed to this Set's waiter (a row naming the
// identity and the ticket it joined with) from one held by another: when
// every other member is free, the fold is a hand-over to the waiter
// (HolderIdentity and HandedTo name it), which it confirms by a takeover
// conditioned on the handed member's RVN and on every other member being
// free, as every takeover of a set is conditioned. While another member is
// held, the set waits for it and keeps the handed member: other waiters see
// that member held by this waiter, and take it over once its RVN stayed
// unchanged for the waiter's lease, as they take over any silent holder's.
// A set waiter that gives up then leaves the hand-over to run out that
// way; one that gives up when the hand-over is whole passes it on (a
// refused Leave carries no row, so that it reads every member afresh and
// sees the hand-over whole).
//
// None of this bears on safety: no queue entry or hand-over gives anybody
// a hold, which only a write of one's own RVN, conditioned as above,
// proves.
//
// # What is not kept
//
// A Set carries no data and no attributes. Its fencing
// token is the one Fence gives every member alike (a set acquired without
// Fence has none: Acquisitions and FenceGeneration are zero). Writes
// of a Set return the record written, not the rows read back (a
// transaction returns none): the acquisition ID is the acquiring write's
// RVN, kept by the Set for its later writes. The set waits for its held
// members as one: the longest lease counts from the last change of any of
// them, not each from its own.
type Set struct {
	*setRows
	identity string
	opts     keylease.Options // what its Create and Update write (With)
}

var _ keylease.Port = (*Set)(nil)

// setRows is a Set's rows and what it remembers of its writes, shared by
// the Set's views (With).
type setRows struct {
	store rows.Store
	keys  []resourcelock.Key
	key   resourcelock.Key

	mu sync.Mutex
	// written: the RVNs of this Set's writes that may be on the rows (the
	// last that landed, and any sent since); acquiring: those of its
	// acquiring writes among them. A row carrying one was written by
	// this Set: RVNs are never reused.
	written, acquiring []string
	acquisitionID      string // of this Set's acquisition, for its holder's writes
	departure          Departure
	// The fencing token of the current acquisition, once FenceMany gave
	// it: a holder's writes leave it on the rows.
	generation, transitions int64
	// The waiter this Set joined its first member's queue as (Join).
	waiter rows.Waiter
	last   map[resourcelock.Key]rows.Item // the found of the last fold
}

// compositeMark starts a composite RVN; a member RVN that starts with it is
// refused as invalid, so that a plain RVN is never read as a composite.
const compositeMark = "\x00set"

// New returns the set of rows at keys of store, sorted and without
// duplicates, written as identity. It checks the keys against the store's
// MaxMany and sends no request.
func New(store rows.Store, keys []resourcelock.Key, identity string) (*Set, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: store is nil", dynalease.ErrInvalid)
	}
	if err := record.CheckIdentity(identity); err != nil {
		return nil, err
	}
	keys = slices.Clone(keys)
	slices.SortFunc(keys, compareKeys)
	keys = slices.Compact(keys)
	if err := record.CheckMany(keys, store.MaxMany()); err != nil {
		return nil, err
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
	}
	return &Set{setRows: &setRows{store: store, keys: keys, key: resourcelock.Key{Partition: strings.Join(names, ",")}}, identity: identity}, nil
}

// With returns the set writing o with every Create and Update, sharing
// this one's memory of its writes.
func (s *Set) With(o keylease.Options) keylease.Port {
	return &Set{setRows: s.setRows, identity: s.identity, opts: o}
}

// Identity returns the holder identity the set writes.
func (s *Set) Identity() string { return s.identity }

// Describe returns the store's description and the set's name.
func (s *Set) Describe() string { return s.store.Describe() + "/" + s.key.String() }

func compareKeys(a, b resourcelock.Key) int {
	if c := strings.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	return strings.Compare(a.Sort, b.Sort)
}

// Keys returns the members, sorted.
func (s *Set) Keys() []resourcelock.Key { return slices.Clone(s.keys) }

// Key returns the set's name as a Key: the members' names joined by
// commas, in order. It names no row.
func (s *Set) Key() resourcelock.Key { return s.key }

// Store returns the store the members are in.
func (s *Set) Store() rows.Store { return s.store }

// CanFence reports whether Fence can work (see Store.CanFence).
func (s *Set) CanFence() bool { return s.store.CanFence() }

// Get reads every member in one snapshot and returns them folded into one
// item, or an error wrapping ErrNotFound when every member is missing.
func (s *Set) Get(ctx context.Context) (rows.Item, error) {
	found, err := s.store.GetMany(ctx, s.keys)
	if err != nil {
		return rows.Item{}, err
	}
	return s.fold(found)
}

// Departure says which member keeps a set from being held as a whole, and
// how: the first member that does not carry a write of this Set (for the
// Set that wrote the members; for any other, the first member held by
// somebody).
type Departure struct {
	Key            resourcelock.Key
	Missing        bool   // the row was deleted
	Released       bool   // the row is marked released, by HolderIdentity
	HolderIdentity string // the row's holder identity ("" when missing)
}

// Departure returns what the last Get found keeping the set from being
// whole, and false when it found the set whole, or free, or missing.
func (s *Set) Departure() (Departure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.departure, s.departure.Key != resourcelock.Key{}
}

// fold folds the member rows into one item (see Set).
func (s *Set) fold(found map[resourcelock.Key]rows.Item) (rows.Item, error) {
	for _, r := range found {
		if strings.IndexByte(r.RVN, 0) >= 0 {
			return rows.Item{}, fmt.Errorf("%w: invalid record: %s: the RVN holds a NUL byte", resourcelock.ErrPermanent, r.Key)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = found
	s.departure = Departure{}
	if len(found) == 0 {
		return rows.Item{}, fmt.Errorf("%s: %w", s.key, resourcelock.ErrNotFound)
	}
	if it, ok := s.foldWholeLocked(found); ok {
		return it, nil
	}
	return s.foldCompositeLocked(found), nil
}

// foldWholeLocked folds rows written as one by a Set: every member
// present with one holder, RVN and acquisition, all held or all released.
// It reports false for rows that are not. s.mu is held.
func (s *Set) foldWholeLocked(found map[resourcelock.Key]rows.Item) (rows.Item, bool) {
	first := found[s.keys[0]]
	if len(found) != len(s.keys) {
		return rows.Item{}, false
	}
	token := true // one fencing token on every row
	for _, k := range s.keys[1:] {
		r := found[k]
		if r.Released != first.Released || r.RVN != first.RVN || r.HolderIdentity != first.HolderIdentity || r.AcquisitionID != first.AcquisitionID {
			return rows.Item{}, false
		}
		token = token && r.FenceGeneration == first.FenceGeneration && r.Acquisitions == first.Acquisitions
	}
	rec := first.Record
	rec.Data = nil
	if !token {
		rec.Acquisitions, rec.FenceGeneration = 0, 0
	}
	if slices.Contains(s.acquiring, rec.AcquisitionID) {
		// An acquisition of this Set's, whose answer may have been lost
		// (or whose fencing was not read back): its writes keep its ID,
		// and its holder's writes the token the rows carry, which a
		// renewal does not change.
		s.acquisitionID = rec.AcquisitionID
		if !rows.NeedsFence(rec) {
			s.generation, s.transitions = rec.FenceGeneration, rec.Acquisitions
		}
	}
	return rows.Item{Key: s.key, Record: rec, Queue: first.Queue}, true
}

// foldCompositeLocked folds rows that are not held as one: a composite
// RVN, held for the longest lease of the held members by the first holder
// other than this Set (or handed to its waiter when every held member
// is), and the Departure. s.mu is held.
func (s *Set) foldCompositeLocked(found map[resourcelock.Key]rows.Item) rows.Item {
	var b strings.Builder
	b.WriteString(compositeMark)
	rec := resourcelock.Record{Released: true}
	var others string // the holder of the first member held by somebody else
	// Whether a member is handed to this Set's waiter, and whether every
	// held member is.
	handedAny, allHanded := false, true
	for _, k := range s.keys {
		b.WriteByte(0)
		r, ok := found[k]
		// A released row is never ours: a forced release, and the AWS
		// Java client's, keep the RVN they found.
		ours := ok && !r.Released && slices.Contains(s.written, r.RVN)
		if s.departure.Key == (resourcelock.Key{}) && !ours && (len(s.written) > 0 || (ok && !r.Released)) {
			s.departure = Departure{Key: k, Missing: !ok, Released: ok && r.Released, HolderIdentity: r.HolderIdentity}
		}
		if !ok || r.Released {
			// Free: whoever freed it and however often, it may be taken
			// at once, so its state does not restart the set's timer.
			b.WriteByte('f')
			continue
		}
		b.WriteByte('=')
		b.WriteString(r.RVN)
		if rec.Released {
			rec.Released = false
			rec.HolderIdentity, rec.AcquireTime, rec.RenewTime = r.HolderIdentity, r.AcquireTime, r.RenewTime
		}
		handed := !ours && s.handedToMe(r)
		handedAny = handedAny || handed
		allHanded = allHanded && handed
		if !ours && !handed && others == "" {
			others = r.HolderIdentity
		}
		rec.LeaseDuration = max(rec.LeaseDuration, r.LeaseDuration)
	}
	switch {
	case others != "":
		rec.HolderIdentity = others
	case handedAny && allHanded:
		// Handed to this waiter, the rest free: it may confirm at once.
		rec.HolderIdentity, rec.HandedTo = s.waiter.Identity, s.waiter.Ticket
	}
	rec.RVN = b.String()
	return rows.Item{Key: s.key, Record: rec, Queue: found[s.keys[0]].Queue}
}

// handedToMe reports whether the row r is a hand-over to this Set's
// waiter, unconfirmed. s.mu is held.
func (s *Set) handedToMe(r rows.Item) bool {
	return s.waiter.Ticket != "" && !r.Released && r.HandedTo == s.waiter.Ticket && r.HolderIdentity == s.waiter.Identity
}

// expectations returns, member by member, the write that the state named by
// rvn calls for: for a plain RVN, a WriteUpdate on it everywhere, with
// holder when not empty; for a composite, which no holder's write may
// expect (its rows are not held as one), a WriteUpdate on each held
// member's RVN and a WriteCreate where the member was free.
func (s *Set) expectations(rvn, holder string) ([]rows.Write, error) {
	writes := make([]rows.Write, len(s.keys))
	if !strings.HasPrefix(rvn, compositeMark) {
		for i, k := range s.keys {
			writes[i] = rows.Write{Key: k, Kind: rows.WriteUpdate, Expect: resourcelock.Precondition{RVN: rvn, HolderIdentity: holder}}
		}
		return writes, nil
	}
	if holder != "" {
		return nil, rows.Conflict(fmt.Sprintf("%s: a holder's write", s.key), nil,
			errors.New("the found are not held as one set"))
	}
	parts := strings.Split(rvn[len(compositeMark):], "\x00")
	if len(parts) != len(s.keys)+1 || parts[0] != "" {
		return nil, fmt.Errorf("%w: %s: the expected RVN is a composite of another set", dynalease.ErrInvalid, s.key)
	}
	for i, k := range s.keys {
		p := parts[i+1]
		switch {
		case p == "f":
			writes[i] = rows.Write{Key: k, Kind: rows.WriteCreate}
		case len(p) > 1 && p[0] == '=':
			writes[i] = rows.Write{Key: k, Kind: rows.WriteUpdate, Expect: resourcelock.Precondition{RVN: p[1:]}}
		default:
			return nil, fmt.Errorf("%w: %s: malformed composite RVN", dynalease.ErrInvalid, s.key)
		}
	}
	return writes, nil
}

// Create writes rec on every member when each is missing or released,
// whatever its queue: unlike Interface.Create's "free", since a set queues
// on its first key only and is not ordered against the waiters of its
// other keys (WriteCreate).
func (s *Set) Create(ctx context.Context, rec resourcelock.Record) (rows.Item, error) {
	rec, err := keylease.FillHolder(s.identity, rec, false)
	if err != nil {
		return rows.Item{}, err
	}
	writes := make([]rows.Write, len(s.keys))
	for i, k := range s.keys {
		writes[i] = rows.Write{Key: k, Kind: rows.WriteCreate}
	}
	return s.write(ctx, fill(writes, rec, s.opts.At(time.Now()), nil), rec, true)
}

// Update writes rec on every member when the set is in the state expect
// names (see Set).
func (s *Set) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (rows.Item, error) {
	rec, err := keylease.FillHolder(s.identity, rec, expect.HolderIdentity == s.identity)
	if err != nil {
		return rows.Item{}, err
	}
	if err := record.CheckPrecondition(expect); err != nil {
		return rows.Item{}, err
	}
	writes, err := s.expectations(expect.RVN, expect.HolderIdentity)
	if err != nil {
		return rows.Item{}, err
	}
	return s.write(ctx, fill(writes, rec, s.opts.At(time.Now()), nil), rec, expect.HolderIdentity == "")
}

// UpdateDequeue is Update with d conditioning the first member's write on
// its queue and taking the entries it names out (see WriteOptions.Dequeue):
// the set's queue (see Set). A record naming HandedTo is a holder's
// hand-over: the first member is handed over and the others are marked
// released, each with rec's RVN. A holder's write that expects a composite
// (a waiter passing on the first member, handed to it, while others are
// free) writes the first member only, conditioned on its RVN and holder.
func (s *Set) UpdateDequeue(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record, d *rows.Dequeue) (rows.Item, error) {
	rec, err := keylease.FillHolder(s.identity, rec, expect.HolderIdentity == s.identity)
	if err != nil {
		return rows.Item{}, err
	}
	if err := record.CheckPrecondition(expect); err != nil {
		return rows.Item{}, err
	}
	var writes []rows.Write
	if expect.HolderIdentity != "" && strings.HasPrefix(expect.RVN, compositeMark) {
		w, err := s.firstExpectation(expect)
		if err != nil {
			return rows.Item{}, err
		}
		writes = []rows.Write{w}
	} else {
		var err error
		if writes, err = s.expectations(expect.RVN, expect.HolderIdentity); err != nil {
			return rows.Item{}, err
		}
	}
	return s.write(ctx, fill(writes, rec, s.opts.At(time.Now()), d), rec, expect.HolderIdentity == "")
}

// firstExpectation returns the write of the first member that a holder's
// write expecting the composite expect calls for: an update conditioned on
// the member's RVN in it and on the holder.
func (s *Set) firstExpectation(expect resourcelock.Precondition) (rows.Write, error) {
	writes, err := s.expectations(expect.RVN, "")
	if err != nil {
		return rows.Write{}, err
	}
	w := writes[0]
	if w.Kind != rows.WriteUpdate {
		return rows.Write{}, rows.Conflict(fmt.Sprintf("%s: a holder's write", s.key), nil,
			errors.New("the first member is free: there is nothing to pass on"))
	}
	w.Expect.HolderIdentity = expect.HolderIdentity
	return w, nil
}

// fill gives every write rec and opts, and the first one d. A hand-over
// (rec naming HandedTo) goes to the first row only: the others get rec
// marked released by the releaser.
func fill(writes []rows.Write, rec resourcelock.Record, opts rows.WriteOptions, d *rows.Dequeue) []rows.Write {
	released := rec
	released.Released, released.HandedTo = true, ""
	for i := range writes {
		writes[i].Record, writes[i].Options = rec, opts
		if i > 0 && rec.HandedTo != "" {
			writes[i].Record = released
			writes[i].Record.HolderIdentity = writes[i].Expect.HolderIdentity
		}
	}
	writes[0].Options.Dequeue = d
	return writes
}

// Joinable makes w the waiter this Set waits as, and reports whether there
// is a queue to join: false when the last read showed the first member
// free, missing, handed to w already, or carrying this Set's own write.
// A waiter asks before it joins.
func (s *Set) Joinable(w rows.Waiter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiter = w
	return s.last == nil || s.joinableLocked()
}

// Join queues w on the set's first member (see Set) and returns the set as
// it then stands: the first member as the answer shows it, folded with the
// other members as the last read of the set showed them (read anew when
// there was none). A join refused by the store returns a Conflict carrying
// the set folded with the row that refused it. w is the waiter this Set
// waits as from then on.
func (s *Set) Join(ctx context.Context, w rows.Waiter) (rows.Item, error) {
	s.mu.Lock()
	s.waiter = w
	s.mu.Unlock()
	first, err := s.store.Join(ctx, s.keys[0], w)
	if err != nil {
		return s.refusal(ctx, "join", err)
	}
	return s.foldFirst(ctx, first, true)
}

// joinableLocked reports whether the last fold showed the first member
// held by another than this Set's waiter. s.mu is held.
func (s *Set) joinableLocked() bool {
	r, ok := s.last[s.keys[0]]
	return ok && !r.Released && !s.handedToMe(r) && !slices.Contains(s.written, r.RVN)
}

// Leave takes the entry ticket at index out of the set's queue (see
// Store.Leave) and returns the set as it then stands, folded as Join folds
// it. A refusal is a Conflict that carries no row, so that the caller
// reads every member afresh: a waiter giving up must see a hand-over to it
// whole (the other members freed with it) to pass it on.
func (s *Set) Leave(ctx context.Context, ticket string, index int) (rows.Item, error) {
	first, err := s.store.Leave(ctx, s.keys[0], ticket, index)
	if errors.Is(err, resourcelock.ErrConflict) {
		return rows.Item{}, rows.Conflict(fmt.Sprintf("%s: leave", s.key), nil, errors.New(err.Error()))
	}
	if err != nil {
		return s.refusal(ctx, "leave", err)
	}
	return s.foldFirst(ctx, first, true)
}

// refusal returns the error of a Join or Leave of the first member that
// failed with err: a Conflict carrying the set folded with the row err
// carries (or without the row, when it is missing), or err itself when it
// taught nothing of the row.
func (s *Set) refusal(ctx context.Context, op string, err error) (rows.Item, error) {
	cur, ok := rows.CurrentItem(err)
	var it rows.Item
	var ferr error
	switch {
	case ok:
		it, ferr = s.foldFirst(ctx, cur, true)
	case errors.Is(err, resourcelock.ErrNotFound):
		it, ferr = s.foldFirst(ctx, rows.Item{}, false)
	case errors.Is(err, resourcelock.ErrConflict):
		// A refusal that carries no row: the caller reads.
		return rows.Item{}, rows.Conflict(fmt.Sprintf("%s: %s", s.key, op), nil, errors.New(err.Error()))
	default:
		return rows.Item{}, err
	}
	if ferr != nil {
		return rows.Item{}, ferr
	}
	return rows.Item{}, rows.Conflict(fmt.Sprintf("%s: %s", s.key, op), &it, errors.New(err.Error()))
}

// foldFirst folds the first member's row first (missing unless present)
// with the other members as the last fold saw them, or reads the set when
// there was none.
func (s *Set) foldFirst(ctx context.Context, first rows.Item, present bool) (rows.Item, error) {
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	if last == nil {
		return s.Get(ctx)
	}
	found := maps.Clone(last)
	delete(found, s.keys[0])
	if present {
		found[s.keys[0]] = first
	}
	return s.fold(found)
}

// Remove deletes every member when each carries the RVN expect names (with
// its holder, when it names one). A composite RVN is refused: only rows
// held as one set are removed as one.
func (s *Set) Remove(ctx context.Context, expect resourcelock.Precondition) error {
	if err := record.CheckPrecondition(expect); err != nil {
		return err
	}
	if strings.HasPrefix(expect.RVN, compositeMark) {
		return rows.Conflict(fmt.Sprintf("%s: remove", s.key), nil, errors.New("the found are not held as one set"))
	}
	writes, err := s.expectations(expect.RVN, expect.HolderIdentity)
	if err != nil {
		return err
	}
	for i := range writes {
		writes[i].Kind = rows.WriteRemove
	}
	return s.store.WriteMany(ctx, writes)
}

// Fence gives every member one new fencing generation (see
// Store.FenceMany), so that the set's token, carried by every member,
// is higher than every token any member carried before, and lower than
// the token of any later acquisition of any member. It returns the set
// as fenced.
func (s *Set) Fence(ctx context.Context, acquisitionID string) (rows.Item, error) {
	gen, err := s.store.FenceMany(ctx, s.keys, s.identity, acquisitionID)
	if err != nil {
		return rows.Item{}, err
	}
	it, err := s.Get(ctx)
	if err != nil {
		return rows.Item{}, fmt.Errorf("%s: fenced, but reading the set back failed: %w", s.key, err)
	}
	if it.FenceGeneration != gen || it.Acquisitions != 2 || it.AcquisitionID != acquisitionID {
		return rows.Item{}, fmt.Errorf("%s: fence: %w: the set changed after it was fenced", s.key, resourcelock.ErrConflict)
	}
	s.mu.Lock()
	s.generation, s.transitions = gen, 2
	s.mu.Unlock()
	return it, nil
}

// write sends writes, which carry rec (see fill), and returns the set as
// written.
func (s *Set) write(ctx context.Context, writes []rows.Write, rec resourcelock.Record, acquiring bool) (rows.Item, error) {
	s.mu.Lock()
	s.written = remember(s.written, rec.RVN)
	if acquiring {
		s.acquiring = remember(s.acquiring, rec.RVN)
	}
	s.mu.Unlock()
	if err := s.store.WriteMany(ctx, writes); err != nil {
		return rows.Item{}, err
	}
	// The record as the store keeps it (WriteMany checked it, above).
	out := record.Normalize(rec)
	out.Data = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	// Landed: every earlier write of this Set was conditioned on a state
	// this one replaced, so none of them can land any more.
	s.written = []string{rec.RVN}
	if acquiring {
		s.acquiring = []string{rec.RVN}
		s.acquisitionID = rec.RVN
		s.generation, s.transitions = 0, 0
	}
	out.AcquisitionID = s.acquisitionID
	out.Acquisitions, out.FenceGeneration = s.transitions, s.generation
	// The queue as last read (a transaction returns no rows): a waiter
	// that acquired leaves its entry from there, and a holder's release
	// hands over by it; both are conditioned on it, and read again when
	// it moved.
	return rows.Item{Key: s.key, Record: out, Queue: slices.Clone(s.last[s.keys[0]].Queue)}, nil
}

// maxWritten bounds the RVNs a Set remembers as its own writes.
const maxWritten = 16

// remember adds rvn to the RVNs list, dropping the oldest beyond
// maxWritten.
func remember(list []string, rvn string) []string {
	if len(list) == maxWritten {
		list = list[1:]
	}
	return append(list, rvn)
}
