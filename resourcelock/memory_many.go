package resourcelock

import (
	"context"
	"fmt"
	"slices"

	"github.com/dynalease/dynalease"
)

// memoryMaxMany is the memory store's MaxMany: DynamoDB's, so that code
// tested on the memory store meets the same limit.
const memoryMaxMany = 100

// MaxMany returns 100, DynamoDB's limit on the items of one transaction.
func (s *memoryStore) MaxMany() int { return memoryMaxMany }

// GetMany returns the rows at keys, by key.
func (s *memoryStore) GetMany(ctx context.Context, keys []Key) (map[Key]Item, error) {
	if err := CheckMany(keys, memoryMaxMany); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: get many: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Key]Item, len(keys))
	for i, k := range keys {
		if it, ok := s.items[k]; ok {
			rec := it.Record
			rec.Data = nil
			out[k] = Item{Key: it.Key, Record: rec}
			if i == 0 {
				out[k] = Item{Key: it.Key, Record: rec, Queue: slices.Clone(it.Queue)}
			}
		}
	}
	return out, nil
}

// WriteMany applies every write or none.
func (s *memoryStore) WriteMany(ctx context.Context, writes []Write) error {
	writes, err := PrepareWrites(writes, memoryMaxMany)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: write many: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range writes {
		cur, ok := s.items[w.Key]
		var admitted bool
		switch w.Kind {
		case WriteCreate:
			admitted = !ok || cur.Released // whatever the queue: see ManyStore
		case WriteUpdate:
			admitted = ok && matches(cur.Record, w.Expect)
		case WriteRemove:
			admitted = removeAdmits(cur, ok, w.Expect)
		}
		if !admitted || !queueMatches(cur.Queue, w.Options.Dequeue) {
			return Conflict(fmt.Sprintf("memory/%s: write many", w.Key), nil, nil)
		}
	}
	for _, w := range writes {
		if w.Kind == WriteRemove {
			delete(s.items, w.Key)
			continue
		}
		s.applyLocked(w.Key, s.items[w.Key], w.Record, w.Options, w.acquiring())
	}
	return nil
}

// MaxFenceMany returns 50, DynamoDB's: a fence there writes two items per
// key in one transaction.
func (s *memoryStore) MaxFenceMany() int { return memoryMaxMany / 2 }

// FenceMany gives the rows at keys one generation above all of theirs.
func (s *memoryStore) FenceMany(ctx context.Context, keys []Key, holder, acquisitionID string) (int64, error) {
	if err := CheckMany(keys, s.MaxFenceMany()); err != nil {
		return 0, err
	}
	if holder == "" || acquisitionID == "" {
		return 0, fmt.Errorf("%w: FenceMany needs a holder and an acquisition id", dynalease.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: fence many: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.generations == nil {
		s.generations = map[Key]int64{}
	}
	var gen int64
	for _, k := range keys {
		cur, ok := s.items[k]
		if !ok || cur.HolderIdentity != holder || cur.AcquisitionID != acquisitionID {
			return 0, fmt.Errorf("memory/%s: fence many: %w", k, ErrConflict)
		}
		gen = max(gen, s.generations[k])
	}
	gen++
	for _, k := range keys {
		s.generations[k] = gen
		cur := s.items[k]
		cur.FenceGeneration, cur.Acquisitions = gen, 2
		s.items[k] = cur
	}
	return gen, nil
}
