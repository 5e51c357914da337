package resourcelock

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
)

// MemoryStore holds leases in process. It gives the same answers as a
// DynamoDB table would, with no network, for unit tests of code built on
// Store or Interface. Keys may carry sort key values or not; the store
// does not enforce a schema. It does not delete rows when their TTL passes;
// a test that wants a row deleted calls Delete or DeleteItem. The zero value is not
// usable; call NewMemoryStore. A MemoryStore is safe for concurrent use.
type MemoryStore struct {
	mu          sync.Mutex
	items       map[Key]Item
	generations map[Key]int64 // fencing generations, kept across deletions
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{items: map[Key]Item{}}
}

// Record returns the record called name as stored, and whether there is
// one. It is for tests that inspect the store directly.
func (s *MemoryStore) Record(name string) (Record, bool) {
	it, ok := s.Item(Key{Partition: name})
	return it.Record, ok
}

// Item returns the item at key as stored, and whether there is one.
func (s *MemoryStore) Item(key Key) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[key]
	return cloneItem(it), ok
}

// Put stores rec as the record called name without any condition, as a
// client other than dynalease might. It is for tests that set up foreign
// or corrupt states.
func (s *MemoryStore) Put(name string, rec Record) {
	s.PutItem(Item{Key: Key{Partition: name}, Record: rec})
}

// PutItem stores it without any condition, replacing the whole row.
func (s *MemoryStore) PutItem(it Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[it.Key] = cloneItem(it)
}

// Delete removes the record called name, as DynamoDB's TTL or another
// client might.
func (s *MemoryStore) Delete(name string) { s.DeleteItem(Key{Partition: name}) }

// DeleteItem removes the row at key without any condition.
func (s *MemoryStore) DeleteItem(key Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, key)
}

// Describe returns "memory".
func (s *MemoryStore) Describe() string { return "memory" }

// CanFence reports true: a MemoryStore keeps fencing generations.
func (s *MemoryStore) CanFence() bool { return true }

// Get returns the item at key, or ErrNotFound.
func (s *MemoryStore) Get(ctx context.Context, key Key) (Item, error) {
	if err := CheckKey(key); err != nil {
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
// opts.OnlyIfExists) or released.
func (s *MemoryStore) Create(ctx context.Context, key Key, rec Record, opts WriteOptions) (Item, error) {
	return s.write(ctx, key, "create", rec, opts, func(cur Item, ok bool) bool {
		return (!ok && !opts.OnlyIfExists) || (ok && cur.Released)
	}, true)
}

// Update stores rec at key when the row satisfies expect.
func (s *MemoryStore) Update(ctx context.Context, key Key, expect Precondition, rec Record, opts WriteOptions) (Item, error) {
	if err := CheckPrecondition(expect); err != nil {
		return Item{}, err
	}
	return s.write(ctx, key, "update", rec, opts, func(cur Item, ok bool) bool {
		return ok && matches(cur.Record, expect)
	}, expect.Owner == "")
}

// Remove deletes the row at key when it satisfies expect.
func (s *MemoryStore) Remove(ctx context.Context, key Key, expect Precondition) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := CheckPrecondition(expect); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory/%s: remove: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !ok || cur.RVN != expect.RVN || (expect.Owner != "" && cur.HolderIdentity != expect.Owner) {
		return conflict(key, "remove", cur, ok)
	}
	delete(s.items, key)
	return nil
}

// Scan calls fn for each row (of one partition when partition is set), in
// key order.
func (s *MemoryStore) Scan(ctx context.Context, partition string, fn func(Item, error) error) error {
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

func matches(cur Record, expect Precondition) bool {
	return cur.RVN == expect.RVN && (expect.Owner == "" || (cur.HolderIdentity == expect.Owner && !cur.Released))
}

func (s *MemoryStore) write(ctx context.Context, key Key, op string, rec Record, opts WriteOptions, admit func(cur Item, ok bool) bool, acquiring bool) (Item, error) {
	if err := CheckKey(key); err != nil {
		return Item{}, err
	}
	if err := opts.Check(); err != nil {
		return Item{}, err
	}
	rec, err := PrepareWrite(rec)
	if err != nil {
		return Item{}, err
	}
	if err := ctx.Err(); err != nil {
		return Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !admit(cur, ok) {
		return Item{}, conflict(key, op, cur, ok)
	}
	next := Item{Key: key, Record: rec, Attributes: maps.Clone(cur.Attributes), Expires: opts.ExpiresAt()}
	next.LeaderTransitions = cur.LeaderTransitions
	next.FenceGeneration = cur.FenceGeneration
	next.AcquisitionID = cur.AcquisitionID
	if acquiring {
		next.LeaderTransitions++
		next.AcquisitionID = rec.RVN
	}
	if opts.KeepData {
		next.Data = cur.Data
	}
	for name, v := range opts.Attributes {
		if next.Attributes == nil {
			next.Attributes = map[string]any{}
		}
		next.Attributes[name] = v
	}
	s.items[key] = next
	return cloneItem(next), nil
}

// Fence gives the row at key a new generation and restarts its counter.
func (s *MemoryStore) Fence(ctx context.Context, key Key, holder, acquisitionID string) (Item, error) {
	if err := CheckKey(key); err != nil {
		return Item{}, err
	}
	if holder == "" || acquisitionID == "" {
		return Item{}, fmt.Errorf("%w: Fence needs a holder and an acquisition id", ErrInvalidArgument)
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
	cur.LeaderTransitions = 2
	s.items[key] = cur
	return cloneItem(cur), nil
}
