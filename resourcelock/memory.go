package resourcelock

import (
	"context"
	"fmt"
	"sync"
)

// MemoryStore holds the records of Memory locks in process. It gives the
// same answers as a DynamoDB table would, with no network, for unit tests of
// code built on Interface. The zero value is not usable; call
// NewMemoryStore. A MemoryStore is safe for concurrent use.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]Record
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{records: map[string]Record{}}
}

// Lock returns a lock on the record called name, writing as identity. It
// panics if name or identity is invalid, as a test's setup mistake.
func (s *MemoryStore) Lock(name, identity string) *Memory {
	if err := checkName(name); err != nil {
		panic(err)
	}
	if err := checkIdentity(identity); err != nil {
		panic(err)
	}
	return &Memory{store: s, name: name, identity: identity}
}

// Record returns the record called name as stored, and whether there is
// one. It is for tests that inspect the store directly.
func (s *MemoryStore) Record(name string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[name]
	return normalized(rec), ok
}

// Put stores rec as the record called name without any condition, as a
// client other than dynalease might. It is for tests that set up foreign
// or corrupt states.
func (s *MemoryStore) Put(name string, rec Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[name] = normalized(rec)
}

// Delete removes the record called name, as DynamoDB's TTL or another
// client might.
func (s *MemoryStore) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, name)
}

// Memory is an Interface on one record of a MemoryStore.
type Memory struct {
	store    *MemoryStore
	name     string
	identity string
}

var _ Interface = (*Memory)(nil)

// Identity returns the holder identity this lock writes.
func (m *Memory) Identity() string { return m.identity }

// Describe returns "memory:NAME".
func (m *Memory) Describe() string { return "memory:" + m.name }

// Get returns the stored record, or ErrNotFound.
func (m *Memory) Get(ctx context.Context) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("%s: get: %w", m.Describe(), err)
	}
	rec, ok := m.store.Record(m.name)
	if !ok {
		return Record{}, fmt.Errorf("%s: %w", m.Describe(), ErrNotFound)
	}
	return rec, nil
}

// Create stores rec when there is no record or it is released.
func (m *Memory) Create(ctx context.Context, rec Record) (Record, error) {
	return m.write(ctx, "create", rec, func(cur Record, ok bool) bool {
		return !ok || cur.Released
	}, true)
}

// Update stores rec when the stored record satisfies expect.
func (m *Memory) Update(ctx context.Context, expect Precondition, rec Record) (Record, error) {
	if err := checkPrecondition(expect); err != nil {
		return Record{}, err
	}
	return m.write(ctx, "update", rec, func(cur Record, ok bool) bool {
		return ok && cur.RVN == expect.RVN && (expect.Owner == "" || cur.HolderIdentity == expect.Owner)
	}, expect.Owner == "")
}

func (m *Memory) write(ctx context.Context, op string, rec Record, admit func(cur Record, ok bool) bool, acquiring bool) (Record, error) {
	rec, err := prepareWrite(m.identity, rec)
	if err != nil {
		return Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("%s: %s: %w", m.Describe(), op, err)
	}
	s := m.store
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.records[m.name]
	if !admit(cur, ok) {
		return Record{}, fmt.Errorf("%s: %s: %w", m.Describe(), op, ErrConflict)
	}
	rec.LeaderTransitions = cur.LeaderTransitions
	if acquiring {
		rec.LeaderTransitions++
	}
	s.records[m.name] = rec
	return normalized(rec), nil
}
