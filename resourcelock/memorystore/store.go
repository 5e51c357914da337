package memorystore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/resourcelock"
)

// Store is a resourcelock.Store that holds leases in process. It gives the
// same answers as a DynamoDB table would, with no network, for unit tests
// of code built on the contract (lock.Config.Store, election.Config.Store):
// the same conditions, the same limits (100 rows a request, 50 waiters a
// queue, DynamoDB's key and item sizes), fencing generations kept across
// deletions. Keys may carry sort key values or not; the store does not
// enforce a schema. It does not delete rows when their TTL passes, and it
// has no guarded writes (those are DynamoDB transactions). It is safe for
// concurrent use.
//
// Besides the contract, a test reaches its rows as stored (Item, Record)
// and writes or deletes them without any condition (PutItem, Put,
// DeleteItem, Delete), as another client, a corrupting bug or DynamoDB's
// TTL might.
type Store struct {
	mu          sync.Mutex
	items       map[resourcelock.Key]resourcelock.Item
	generations map[resourcelock.Key]int64 // fencing generations, kept across deletions
}

var _ resourcelock.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{items: map[resourcelock.Key]resourcelock.Item{}}
}

// Record returns the record called name (a key without a sort key value)
// as stored, and whether there is one.
func (s *Store) Record(name string) (resourcelock.Record, bool) {
	it, ok := s.Item(resourcelock.Key{Partition: name})
	return it.Record, ok
}

// Item returns the item at key as stored, and whether there is one.
func (s *Store) Item(key resourcelock.Key) (resourcelock.Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[key]
	return record.Clone(it), ok
}

// Put stores rec as the record called name without any condition.
func (s *Store) Put(name string, rec resourcelock.Record) {
	s.PutItem(resourcelock.Item{Key: resourcelock.Key{Partition: name}, Record: rec})
}

// PutItem stores it without any condition, replacing the whole row.
func (s *Store) PutItem(it resourcelock.Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[it.Key] = record.Clone(it)
}

// Delete removes the record called name without any condition.
func (s *Store) Delete(name string) { s.DeleteItem(resourcelock.Key{Partition: name}) }

// DeleteItem removes the row at key without any condition.
func (s *Store) DeleteItem(key resourcelock.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, key)
}

// Describe returns "memory".
func (s *Store) Describe() string { return "memory" }

// CanFence reports true: the memory store keeps fencing generations.
func (s *Store) CanFence() bool { return true }

// Get returns the item at key, or resourcelock.ErrNotFound.
func (s *Store) Get(ctx context.Context, key resourcelock.Key) (resourcelock.Item, error) {
	if err := record.CheckKey(key); err != nil {
		return resourcelock.Item{}, err
	}
	if err := ctx.Err(); err != nil {
		return resourcelock.Item{}, fmt.Errorf("memory/%s: get: %w", key, err)
	}
	it, ok := s.Item(key)
	if !ok {
		return resourcelock.Item{}, fmt.Errorf("memory/%s: %w", key, resourcelock.ErrNotFound)
	}
	return it, nil
}

// Create stores rec at key when the row is missing (unless
// opts.OnlyIfExists) or free (resourcelock.Item.Free).
func (s *Store) Create(ctx context.Context, key resourcelock.Key, rec resourcelock.Record, opts resourcelock.WriteOptions) (resourcelock.Item, error) {
	return s.write(ctx, key, "create", rec, opts, func(cur resourcelock.Item, ok bool) bool {
		return createAdmits(cur, ok, opts.OnlyIfExists)
	}, true)
}

// Update stores rec at key when the row satisfies expect.
func (s *Store) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts resourcelock.WriteOptions) (resourcelock.Item, error) {
	if err := record.CheckPrecondition(expect); err != nil {
		return resourcelock.Item{}, err
	}
	return s.write(ctx, key, "update", rec, opts, func(cur resourcelock.Item, ok bool) bool {
		return ok && matches(cur.Record, expect)
	}, expect.HolderIdentity == "")
}

// Remove deletes the row at key when it satisfies expect.
func (s *Store) Remove(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition) error {
	if err := record.CheckKey(key); err != nil {
		return err
	}
	if err := record.CheckPrecondition(expect); err != nil {
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
func (s *Store) Scan(ctx context.Context, partition string, fn func(resourcelock.Item, error) error) error {
	s.mu.Lock()
	var items []resourcelock.Item
	for k, it := range s.items {
		if partition == "" || k.Partition == partition {
			items = append(items, record.Clone(it))
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
func conflict(key resourcelock.Key, op string, cur resourcelock.Item, ok bool) error {
	var current *resourcelock.Item
	if ok {
		c := record.Clone(cur)
		current = &c
	}
	return resourcelock.Conflict(fmt.Sprintf("memory/%s: %s", key, op), current, nil)
}

// createAdmits reports whether Create's condition holds on the row cur
// (ok when there is one).
func createAdmits(cur resourcelock.Item, ok, onlyIfExists bool) bool {
	return (!ok && !onlyIfExists) || (ok && cur.Free())
}

// removeAdmits reports whether Remove's condition on expect holds on the
// row cur (ok when there is one).
func removeAdmits(cur resourcelock.Item, ok bool, expect resourcelock.Precondition) bool {
	return ok && cur.RVN == expect.RVN && (expect.HolderIdentity == "" || cur.HolderIdentity == expect.HolderIdentity)
}

// belowHolds reports whether resourcelock.WriteOptions.Below holds on the row cur (ok
// when there is one): each named attribute missing, or an integer below
// its bound.
func belowHolds(cur resourcelock.Item, ok bool, below map[string]int64) bool {
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

func matches(cur resourcelock.Record, expect resourcelock.Precondition) bool {
	return cur.RVN == expect.RVN && (expect.HolderIdentity == "" || (cur.HolderIdentity == expect.HolderIdentity && !cur.Released))
}

func (s *Store) write(ctx context.Context, key resourcelock.Key, op string, rec resourcelock.Record, opts resourcelock.WriteOptions, admit func(cur resourcelock.Item, ok bool) bool, acquiring bool) (resourcelock.Item, error) {
	rec, opts, err := record.Prepare(key, rec, opts)
	if err != nil {
		return resourcelock.Item{}, err
	}
	if err := ctx.Err(); err != nil {
		return resourcelock.Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !admit(cur, ok) || !record.QueueMatches(cur.Queue, opts.Dequeue) || (acquiring && !belowHolds(cur, ok, opts.Below)) {
		return resourcelock.Item{}, conflict(key, op, cur, ok)
	}
	return record.Clone(s.applyLocked(key, cur, rec, opts, acquiring)), nil
}

// applyLocked stores rec at key over the row cur, as a write whose
// condition held, and returns the row stored. s.mu is held.
func (s *Store) applyLocked(key resourcelock.Key, cur resourcelock.Item, rec resourcelock.Record, opts resourcelock.WriteOptions, acquiring bool) resourcelock.Item {
	next := resourcelock.Item{Key: key, Record: rec, Attributes: maps.Clone(cur.Attributes), Numbers: maps.Clone(cur.Numbers), Expires: opts.Expires, Queue: cur.Queue, Candidates: cur.Candidates}
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
func (s *Store) Join(ctx context.Context, key resourcelock.Key, w resourcelock.Waiter) (resourcelock.Item, error) {
	return s.queueOp(ctx, key, "join", func(cur resourcelock.Item) ([]resourcelock.Waiter, bool) {
		if cur.Free() || len(cur.Queue) >= record.MaxQueueLength {
			return nil, false
		}
		return append(slices.Clone(cur.Queue), w), true
	}, record.CheckWaiter(w))
}

// Leave removes the queue entry at index when it carries ticket.
func (s *Store) Leave(ctx context.Context, key resourcelock.Key, ticket string, index int) (resourcelock.Item, error) {
	return s.queueOp(ctx, key, "leave", func(cur resourcelock.Item) ([]resourcelock.Waiter, bool) {
		if index >= len(cur.Queue) || cur.Queue[index].Ticket != ticket {
			return nil, false
		}
		return slices.Delete(slices.Clone(cur.Queue), index, index+1), true
	}, record.CheckLeave(ticket, index))
}

// queueOp replaces the queue of the row at key by what change returns,
// when it admits the row (invalid: the arguments' check).
func (s *Store) queueOp(ctx context.Context, key resourcelock.Key, op string, change func(cur resourcelock.Item) ([]resourcelock.Waiter, bool), invalid error) (resourcelock.Item, error) {
	if err := record.CheckKey(key); err != nil {
		return resourcelock.Item{}, err
	}
	if invalid != nil {
		return resourcelock.Item{}, invalid
	}
	if err := ctx.Err(); err != nil {
		return resourcelock.Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !ok {
		return resourcelock.Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, resourcelock.ErrNotFound)
	}
	q, admitted := change(cur)
	if !admitted {
		return resourcelock.Item{}, conflict(key, op, cur, ok)
	}
	cur.Queue = q
	s.items[key] = cur
	return record.Clone(cur), nil
}

// Fence gives the row at key a new generation and restarts its counter.
func (s *Store) Fence(ctx context.Context, key resourcelock.Key, holder, acquisitionID string) (resourcelock.Item, error) {
	if err := record.CheckKey(key); err != nil {
		return resourcelock.Item{}, err
	}
	if holder == "" || acquisitionID == "" {
		return resourcelock.Item{}, fmt.Errorf("%w: Fence needs a holder and an acquisition id", dynalease.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return resourcelock.Item{}, fmt.Errorf("memory/%s: fence: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.generations == nil {
		s.generations = map[resourcelock.Key]int64{}
	}
	s.generations[key]++
	cur, ok := s.items[key]
	if !ok || cur.HolderIdentity != holder || cur.AcquisitionID != acquisitionID {
		return resourcelock.Item{}, fmt.Errorf("memory/%s: fence: %w", key, resourcelock.ErrConflict)
	}
	cur.FenceGeneration = s.generations[key]
	cur.Acquisitions = 2
	s.items[key] = cur
	return record.Clone(cur), nil
}
