package memorystore

import (
	"context"
	"fmt"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Stand sets c's entry among the candidates of the row at key and drops
// the entries of drop.
func (s *rowStore) Stand(ctx context.Context, key resourcelock.Key, c rows.Candidate, drop []string) (rows.Item, error) {
	if err := record.CheckKey(key); err != nil {
		return rows.Item{}, err
	}
	if err := record.CheckStand(c, drop); err != nil {
		return rows.Item{}, err
	}
	if err := s.refuse(ctx); err != nil {
		return rows.Item{}, fmt.Errorf("memory/%s: stand: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !ok {
		return rows.Item{}, fmt.Errorf("memory/%s: stand: %w", key, resourcelock.ErrNotFound)
	}
	cands, admitted := record.Stood(cur.Candidates, c, drop)
	if !admitted {
		return rows.Item{}, conflict(key, "stand", cur, ok)
	}
	next := record.Clone(cur)
	next.Candidates = cands
	s.items[key] = next
	return record.Clone(next), nil
}
