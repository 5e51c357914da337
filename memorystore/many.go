package memorystore

import (
	"context"
	"fmt"
	"slices"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// MaxMany returns 100, DynamoDB's limit on the items of one transaction.
func (s *rowStore) MaxMany() int { return record.MaxMany }

// GetMany returns the rows at keys, by key.
func (s *rowStore) GetMany(ctx context.Context, keys []resourcelock.Key) (map[resourcelock.Key]rows.Item, error) {
	if err := record.CheckMany(keys, record.MaxMany); err != nil {
		return nil, err
	}
	if err := s.refuse(ctx); err != nil {
		return nil, fmt.Errorf("memory: get many: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[resourcelock.Key]rows.Item, len(keys))
	for i, k := range keys {
		if it, ok := s.items[k]; ok {
			rec := it.Record
			rec.Data = nil
			out[k] = rows.Item{Key: it.Key, Record: rec}
			if i == 0 {
				out[k] = rows.Item{Key: it.Key, Record: rec, Queue: slices.Clone(it.Queue)}
			}
		}
	}
	return out, nil
}

// WriteMany applies every write or none.
func (s *rowStore) WriteMany(ctx context.Context, writes []rows.Write) error {
	writes, err := record.PrepareMany(writes, record.MaxMany)
	if err != nil {
		return err
	}
	if err := s.refuse(ctx); err != nil {
		return fmt.Errorf("memory: write many: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range writes {
		cur, ok := s.items[w.Key]
		var admitted bool
		switch w.Kind {
		case rows.WriteCreate:
			admitted = !ok || cur.Released // whatever the queue: see rows.WriteCreate
		case rows.WriteUpdate:
			admitted = ok && matches(cur.Record, w.Expect)
		case rows.WriteRemove:
			admitted = removeAdmits(cur, ok, w.Expect)
		}
		if !admitted || !record.QueueMatches(cur.Queue, w.Options.Dequeue) {
			return rows.Conflict(fmt.Sprintf("memory/%s: write many", w.Key), nil, nil)
		}
	}
	for _, w := range writes {
		if w.Kind == rows.WriteRemove {
			delete(s.items, w.Key)
			continue
		}
		s.applyLocked(w.Key, s.items[w.Key], w.Record, w.Options, record.Acquiring(w))
	}
	return nil
}

// FenceMany gives the rows at keys one generation above all of theirs.
func (s *rowStore) FenceMany(ctx context.Context, keys []resourcelock.Key, holder, acquisitionID string) (int64, error) {
	if err := record.CheckMany(keys, record.MaxFenceMany); err != nil {
		return 0, err
	}
	if holder == "" || acquisitionID == "" {
		return 0, fmt.Errorf("%w: FenceMany needs a holder and an acquisition id", dynalease.ErrInvalid)
	}
	if err := s.refuse(ctx); err != nil {
		return 0, fmt.Errorf("memory: fence many: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.generations == nil {
		s.generations = map[resourcelock.Key]int64{}
	}
	var gen int64
	for _, k := range keys {
		cur, ok := s.items[k]
		if !ok || cur.HolderIdentity != holder || cur.AcquisitionID != acquisitionID {
			return 0, fmt.Errorf("memory/%s: fence many: %w", k, resourcelock.ErrConflict)
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
