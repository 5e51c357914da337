package resourcelock

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/dynalease/dynalease"
)

// memoryStore holds leases in process (see NewMemoryStore).
type memoryStore struct {
	mu          sync.Mutex
	items       map[Key]Item
	generations map[Key]int64 // fencing generations, kept across deletions
}

// NewMemoryStore returns an empty Store that holds leases in process. It
// gives the same answers as a DynamoDB table would, with no network, for
// unit tests of code built on Store or Interface (lock.Config.Store,
// NewLease). Keys may carry sort key values or not; the store does not
// enforce a schema. It keeps fencing generations. It does not delete rows
// when their TTL passes, and it has no guarded writes (those are
// DynamoDB transactions). It implements ManyStore, with DynamoDB's limit
// of 100 rows per request. It is safe for concurrent use.
//
// A test that must set up rows no client would write (a foreign or corrupt
// row, a row deleted as TTL would) reaches them through
// resourcelocktest.NewMemoryStore.
func NewMemoryStore() Store {
	return &memoryStore{items: map[Key]Item{}}
}

// The methods below, exported by name but not by type, are reached only
// through resourcelocktest.MemoryStore: rows as stored, written and
// deleted without any condition.

// Record returns the record called name as stored, and whether there is
// one.
func (s *memoryStore) Record(name string) (Record, bool) {
	it, ok := s.Item(Key{Partition: name})
	return it.Record, ok
}

// Item returns the item at key as stored, and whether there is one.
func (s *memoryStore) Item(key Key) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[key]
	return cloneItem(it), ok
}

// Put stores rec as the record called name without any condition.
func (s *memoryStore) Put(name string, rec Record) {
	s.PutItem(Item{Key: Key{Partition: name}, Record: rec})
}

// PutItem stores it without any condition, replacing the whole row.
func (s *memoryStore) PutItem(it Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[it.Key] = cloneItem(it)
}

// Delete removes the record called name without any condition.
func (s *memoryStore) Delete(name string) { s.DeleteItem(Key{Partition: name}) }

// DeleteItem removes the row at key without any condition.
func (s *memoryStore) DeleteItem(key Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, key)
}

// Describe returns "memory".
func (s *memoryStore) Describe() string { return "memory" }

// CanFence reports true: the memory store keeps fencing generations.
func (s *memoryStore) CanFence() bool { return true }

// Get returns the item at key, or ErrNotFound.
func (s *memoryStore) Get(ctx context.Context, key Key) (Item, error) {
	if err := key.Check(); err != nil {
		return Item{}, err
	}
	if err := ctx.Err(); err != nil {
		return Item{}, fmt.Errorf("memory/%s: get: %w", key, err)
	}
	it, ok := s.Item(key)
	if !ok {
		return Item{}, fmt.Errorf("memory/%s: %w", key, ErrNotFound)
	}
	return it, nil
}

// Create stores rec at key when the row is missing (unless
// opts.OnlyIfExists) or free (Item.Free).
func (s *memoryStore) Create(ctx context.Context, key Key, rec Record, opts WriteOptions) (Item, error) {
	return s.write(ctx, key, "create", rec, opts, func(cur Item, ok bool) bool {
		return createAdmits(cur, ok, opts.OnlyIfExists)
	}, true)
}

// Update stores rec at key when the row satisfies expect.
func (s *memoryStore) Update(ctx context.Context, key Key, expect Precondition, rec Record, opts WriteOptions) (Item, error) {
	if err := expect.Check(); err != nil {
		return Item{}, err
	}
	return s.write(ctx, key, "update", rec, opts, func(cur Item, ok bool) bool {
		return ok && matches(cur.Record, expect)
	}, expect.HolderIdentity == "")
}

// Remove deletes the row at key when it satisfies expect.
func (s *memoryStore) Remove(ctx context.Context, key Key, expect Precondition) error {
	if err := key.Check(); err != nil {
		return err
	}
	if err := expect.Check(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory/%s: remove: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !removeAdmits(cur, ok, expect) {
		return conflict(key, "remove", cur, ok)
	}
	delete(s.items, key)
	return nil
}

// Scan calls fn for each row (of one partition when partition is set), in
// key order.
func (s *memoryStore) Scan(ctx context.Context, partition string, fn func(Item, error) error) error {
	s.mu.Lock()
	var items []Item
	for k, it := range s.items {
		if partition == "" || k.Partition == partition {
			items = append(items, cloneItem(it))
		}
	}
	s.mu.Unlock()
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].Key, items[j].Key
		return a.Partition < b.Partition || (a.Partition == b.Partition && a.Sort < b.Sort)
	})
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(it, nil); err != nil {
			return err
		}
	}
	return nil
}

// conflict returns the error of a failed condition on the row cur (ok
// when there is one), carrying the row as dynamodbstore.Store does.
func conflict(key Key, op string, cur Item, ok bool) error {
	var current *Item
	if ok {
		c := cloneItem(cur)
		current = &c
	}
	return Conflict(fmt.Sprintf("memory/%s: %s", key, op), current, nil)
}

// createAdmits reports whether Create's condition holds on the row cur
// (ok when there is one).
func createAdmits(cur Item, ok, onlyIfExists bool) bool {
	return (!ok && !onlyIfExists) || (ok && cur.Free())
}

// removeAdmits reports whether Remove's condition on expect holds on the
// row cur (ok when there is one).
func removeAdmits(cur Item, ok bool, expect Precondition) bool {
	return ok && cur.RVN == expect.RVN && (expect.HolderIdentity == "" || cur.HolderIdentity == expect.HolderIdentity)
}

// belowHolds reports whether WriteOptions.Below holds on the row cur (ok
// when there is one): each named attribute missing, or an integer below
// its bound.
func belowHolds(cur Item, ok bool, below map[string]int64) bool {
	if !ok {
		return true
	}
	for name, bound := range below {
		if _, other := cur.Attributes[name]; other {
			return false
		}
		if n, has := cur.Numbers[name]; has && n >= bound {
			return false
		}
	}
	return true
}

func matches(cur Record, expect Precondition) bool {
	return cur.RVN == expect.RVN && (expect.HolderIdentity == "" || (cur.HolderIdentity == expect.HolderIdentity && !cur.Released))
}

func (s *memoryStore) write(ctx context.Context, key Key, op string, rec Record, opts WriteOptions, admit func(cur Item, ok bool) bool, acquiring bool) (Item, error) {
	rec, opts, err := PrepareWrite(key, rec, opts)
	if err != nil {
		return Item{}, err
	}
	if err := ctx.Err(); err != nil {
		return Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !admit(cur, ok) || !queueMatches(cur.Queue, opts.Dequeue) || (acquiring && !belowHolds(cur, ok, opts.Below)) {
		return Item{}, conflict(key, op, cur, ok)
	}
	return cloneItem(s.applyLocked(key, cur, rec, opts, acquiring)), nil
}

// applyLocked stores rec at key over the row cur, as a write whose
// condition held, and returns the row stored. s.mu is held.
func (s *memoryStore) applyLocked(key Key, cur Item, rec Record, opts WriteOptions, acquiring bool) Item {
	next := Item{Key: key, Record: rec, Attributes: maps.Clone(cur.Attributes), Numbers: maps.Clone(cur.Numbers), Expires: opts.Expires, Queue: cur.Queue}
	if opts.KeepTTL {
		next.Expires = cur.Expires
	}
	if opts.Dequeue != nil {
		next.Queue = slices.Clone(cur.Queue[len(opts.Dequeue.Tickets):])
	}
	next.Acquisitions = cur.Acquisitions
	next.FenceGeneration = cur.FenceGeneration
	next.AcquisitionID = cur.AcquisitionID
	if acquiring {
		next.Acquisitions++
		next.AcquisitionID = rec.RVN
	}
	if rec.HandedTo != "" {
		next.AcquisitionID = "" // a hand-over is nobody's acquisition
	}
	if opts.KeepData {
		next.Data = cur.Data
	}
	for name, v := range opts.Attributes {
		if next.Attributes == nil {
			next.Attributes = map[string]any{}
		}
		next.Attributes[name] = v
		delete(next.Numbers, name)
	}
	for name, n := range opts.Numbers {
		if next.Numbers == nil {
			next.Numbers = map[string]int64{}
		}
		next.Numbers[name] = n
		delete(next.Attributes, name)
	}
	s.items[key] = next
	return next
}

// Join appends w to the queue of the row at key.
func (s *memoryStore) Join(ctx context.Context, key Key, w Waiter) (Item, error) {
	return s.queueOp(ctx, key, "join", func(cur Item) ([]Waiter, bool) {
		if cur.Free() || len(cur.Queue) >= MaxQueueLength {
			return nil, false
		}
		return append(slices.Clone(cur.Queue), w), true
	}, w.Check())
}

// Leave removes the queue entry at index when it carries ticket.
func (s *memoryStore) Leave(ctx context.Context, key Key, ticket string, index int) (Item, error) {
	return s.queueOp(ctx, key, "leave", func(cur Item) ([]Waiter, bool) {
		if index >= len(cur.Queue) || cur.Queue[index].Ticket != ticket {
			return nil, false
		}
		return slices.Delete(slices.Clone(cur.Queue), index, index+1), true
	}, CheckLeave(ticket, index))
}

// queueOp replaces the queue of the row at key by what change returns,
// when it admits the row (invalid: the arguments' check).
func (s *memoryStore) queueOp(ctx context.Context, key Key, op string, change func(cur Item) ([]Waiter, bool), invalid error) (Item, error) {
	if err := key.Check(); err != nil {
		return Item{}, err
	}
	if invalid != nil {
		return Item{}, invalid
	}
	if err := ctx.Err(); err != nil {
		return Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !ok {
		return Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, ErrNotFound)
	}
	q, admitted := change(cur)
	if !admitted {
		return Item{}, conflict(key, op, cur, ok)
	}
	cur.Queue = q
	s.items[key] = cur
	return cloneItem(cur), nil
}

// Fence gives the row at key a new generation and restarts its counter.
func (s *memoryStore) Fence(ctx context.Context, key Key, holder, acquisitionID string) (Item, error) {
	if err := key.Check(); err != nil {
		return Item{}, err
	}
	if holder == "" || acquisitionID == "" {
		return Item{}, fmt.Errorf("%w: Fence needs a holder and an acquisition id", dynalease.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return Item{}, fmt.Errorf("memory/%s: fence: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.generations == nil {
		s.generations = map[Key]int64{}
	}
	s.generations[key]++
	cur, ok := s.items[key]
	if !ok || cur.HolderIdentity != holder || cur.AcquisitionID != acquisitionID {
		return Item{}, fmt.Errorf("memory/%s: fence: %w", key, ErrConflict)
	}
	cur.FenceGeneration = s.generations[key]
	cur.Acquisitions = 2
	s.items[key] = cur
	return cloneItem(cur), nil
}
