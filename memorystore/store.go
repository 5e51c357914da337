package memorystore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
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
// Besides what lock and election do with it, a test reads a record as
// stored (Record) and writes or deletes one without any condition (Put,
// Delete), as another client, a corrupting bug or DynamoDB's TTL might.
type Store struct {
	seal // its rows, as the kernel reads and writes them
	r    *rowStore
}

// seal carries a Store's rows (see rows.Seal).
type seal = rows.Seal

// rowStore is a Store as the kernel reads and writes it: rows.Store in
// process.
type rowStore struct {
	mu          sync.Mutex
	items       map[resourcelock.Key]rows.Item
	generations map[resourcelock.Key]int64 // fencing generations, kept across deletions
	failure     atomic.Pointer[error]      // FailRequests's error, nil when requests are served
}

var (
	_ rows.Store         = (*rowStore)(nil)
	_ resourcelock.Store = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	r := &rowStore{items: map[resourcelock.Key]rows.Item{}}
	return &Store{seal: rows.NewSeal(r), r: r}
}

// Record returns the record called name (a key without a sort key value)
// as stored, and whether there is one.
func (s *Store) Record(name string) (resourcelock.Record, bool) {
	it, ok := s.r.Item(resourcelock.Key{Partition: name})
	return it.Record, ok
}

// Item returns the item at key as stored, and whether there is one.
func (s *rowStore) Item(key resourcelock.Key) (rows.Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[key]
	return record.Clone(it), ok
}

// Put stores rec as the record called name without any condition.
func (s *Store) Put(name string, rec resourcelock.Record) {
	s.r.PutItem(rows.Item{Key: resourcelock.Key{Partition: name}, Record: rec})
}

// PutItem stores it without any condition, replacing the whole row.
func (s *rowStore) PutItem(it rows.Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[it.Key] = record.Clone(it)
}

// Delete removes the record called name without any condition.
func (s *Store) Delete(name string) { s.r.DeleteItem(resourcelock.Key{Partition: name}) }

// DeleteItem removes the row at key without any condition.
func (s *rowStore) DeleteItem(key resourcelock.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, key)
}

// Describe returns "memory".
func (s *Store) Describe() string { return "memory" }

// FailRequests makes every request to the store fail with err, changing
// nothing, until it is called again with nil: a test's way to cut its
// code off from the table, as a network outage or an unreachable endpoint
// would. A request under way when it is called is not affected.
func (s *Store) FailRequests(err error) {
	if err == nil {
		s.r.failure.Store(nil)
		return
	}
	s.r.failure.Store(&err)
}

// refuse returns the error a request meets before it is served: ctx's,
// or FailRequests's.
func (s *rowStore) refuse(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.failure.Load(); err != nil {
		return *err
	}
	return nil
}

// Describe returns "memory".
func (s *rowStore) Describe() string { return "memory" }

// CanFence reports true: the memory store keeps fencing generations.
func (s *rowStore) CanFence() bool { return true }

// Get returns the item at key, or resourcelock.ErrNotFound.
func (s *rowStore) Get(ctx context.Context, key resourcelock.Key) (rows.Item, error) {
	if err := record.CheckKey(key); err != nil {
		return rows.Item{}, err
	}
	if err := s.refuse(ctx); err != nil {
		return rows.Item{}, fmt.Errorf("memory/%s: get: %w", key, err)
	}
	it, ok := s.Item(key)
	if !ok {
		return rows.Item{}, fmt.Errorf("memory/%s: %w", key, resourcelock.ErrNotFound)
	}
	return it, nil
}

// Create stores rec at key when the row is missing (unless
// opts.OnlyIfExists) or free (rows.Item.Free).
func (s *rowStore) Create(ctx context.Context, key resourcelock.Key, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	return s.write(ctx, key, "create", rec, opts, func(cur rows.Item, ok bool) bool {
		return createAdmits(cur, ok, opts.OnlyIfExists)
	}, true)
}

// Update stores rec at key when the row satisfies expect.
func (s *rowStore) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	if err := record.CheckPrecondition(expect); err != nil {
		return rows.Item{}, err
	}
	return s.write(ctx, key, "update", rec, opts, func(cur rows.Item, ok bool) bool {
		return ok && matches(cur.Record, expect)
	}, expect.HolderIdentity == "")
}

// Remove deletes the row at key when it satisfies expect.
func (s *rowStore) Remove(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition) error {
	if err := record.CheckKey(key); err != nil {
		return err
	}
	if err := record.CheckPrecondition(expect); err != nil {
		return err
	}
	if err := s.refuse(ctx); err != nil {
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
func (s *rowStore) Scan(ctx context.Context, partition string, fn func(rows.Item, error) error) error {
	if err := s.refuse(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	var items []rows.Item
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
		if err := s.refuse(ctx); err != nil {
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
func conflict(key resourcelock.Key, op string, cur rows.Item, ok bool) error {
	var current *rows.Item
	if ok {
		c := record.Clone(cur)
		current = &c
	}
	return rows.Conflict(fmt.Sprintf("memory/%s: %s", key, op), current, nil)
}

// createAdmits reports whether Create's condition holds on the row cur
// (ok when there is one).
func createAdmits(cur rows.Item, ok, onlyIfExists bool) bool {
	return (!ok && !onlyIfExists) || (ok && cur.Free())
}

// removeAdmits reports whether Remove's condition on expect holds on the
// row cur (ok when there is one).
func removeAdmits(cur rows.Item, ok bool, expect resourcelock.Precondition) bool {
	return ok && cur.RVN == expect.RVN && (expect.HolderIdentity == "" || cur.HolderIdentity == expect.HolderIdentity)
}

// belowHolds reports whether rows.WriteOptions.Below holds on the row cur (ok
// when there is one): each named attribute missing, or an integer below
// its bound.
func belowHolds(cur rows.Item, ok bool, below map[string]int64) bool {
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

func (s *rowStore) write(ctx context.Context, key resourcelock.Key, op string, rec resourcelock.Record, opts rows.WriteOptions, admit func(cur rows.Item, ok bool) bool, acquiring bool) (rows.Item, error) {
	rec, opts, err := record.Prepare(key, rec, opts)
	if err != nil {
		return rows.Item{}, err
	}
	if err := s.refuse(ctx); err != nil {
		return rows.Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !admit(cur, ok) || !record.QueueMatches(cur.Queue, opts.Dequeue) || (acquiring && !belowHolds(cur, ok, opts.Below)) {
		return rows.Item{}, conflict(key, op, cur, ok)
	}
	return record.Clone(s.applyLocked(key, cur, rec, opts, acquiring)), nil
}

// applyLocked stores rec at key over the row cur, as a write whose
// condition held, and returns the row stored. s.mu is held.
func (s *rowStore) applyLocked(key resourcelock.Key, cur rows.Item, rec resourcelock.Record, opts rows.WriteOptions, acquiring bool) rows.Item {
	next := rows.Item{Key: key, Record: rec, Attributes: maps.Clone(cur.Attributes), Numbers: maps.Clone(cur.Numbers), Expires: opts.Expires, Queue: cur.Queue, Candidates: cur.Candidates}
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
func (s *rowStore) Join(ctx context.Context, key resourcelock.Key, w rows.Waiter) (rows.Item, error) {
	return s.queueOp(ctx, key, "join", func(cur rows.Item) ([]rows.Waiter, bool) {
		if cur.Free() || len(cur.Queue) >= record.MaxQueueLength {
			return nil, false
		}
		return append(slices.Clone(cur.Queue), w), true
	}, record.CheckWaiter(w))
}

// Leave removes the queue entry at index when it carries ticket.
func (s *rowStore) Leave(ctx context.Context, key resourcelock.Key, ticket string, index int) (rows.Item, error) {
	return s.queueOp(ctx, key, "leave", func(cur rows.Item) ([]rows.Waiter, bool) {
		if index >= len(cur.Queue) || cur.Queue[index].Ticket != ticket {
			return nil, false
		}
		return slices.Delete(slices.Clone(cur.Queue), index, index+1), true
	}, record.CheckLeave(ticket, index))
}

// queueOp replaces the queue of the row at key by what change returns,
// when it admits the row (invalid: the arguments' check).
func (s *rowStore) queueOp(ctx context.Context, key resourcelock.Key, op string, change func(cur rows.Item) ([]rows.Waiter, bool), invalid error) (rows.Item, error) {
	if err := record.CheckKey(key); err != nil {
		return rows.Item{}, err
	}
	if invalid != nil {
		return rows.Item{}, invalid
	}
	if err := s.refuse(ctx); err != nil {
		return rows.Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !ok {
		return rows.Item{}, fmt.Errorf("memory/%s: %s: %w", key, op, resourcelock.ErrNotFound)
	}
	q, admitted := change(cur)
	if !admitted {
		return rows.Item{}, conflict(key, op, cur, ok)
	}
	cur.Queue = q
	s.items[key] = cur
	return record.Clone(cur), nil
}

// Fence gives the row at key a new generation and restarts its counter.
func (s *rowStore) Fence(ctx context.Context, key resourcelock.Key, holder, acquisitionID string) (rows.Item, error) {
	if err := record.CheckKey(key); err != nil {
		return rows.Item{}, err
	}
	if holder == "" || acquisitionID == "" {
		return rows.Item{}, fmt.Errorf("%w: Fence needs a holder and an acquisition id", dynalease.ErrInvalid)
	}
	if err := s.refuse(ctx); err != nil {
		return rows.Item{}, fmt.Errorf("memory/%s: fence: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.generations == nil {
		s.generations = map[resourcelock.Key]int64{}
	}
	s.generations[key]++
	cur, ok := s.items[key]
	if !ok || cur.HolderIdentity != holder || cur.AcquisitionID != acquisitionID {
		return rows.Item{}, fmt.Errorf("memory/%s: fence: %w", key, resourcelock.ErrConflict)
	}
	cur.FenceGeneration = s.generations[key]
	cur.Acquisitions = 2
	s.items[key] = cur
	return record.Clone(cur), nil
}
