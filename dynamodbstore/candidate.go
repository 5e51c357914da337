package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// The candidates of a row: a map (M) from each candidate's ticket to its
// entry, a map with the candidate's owner name, priority and the entry's
// RVN. A ticket is a map key, so a candidate writes its entry by path
// and candidates never conflict with one another or with the holder.
const (
	candidateIdentity = "o" // S
	candidatePriority = "p" // N
	candidateRVN      = "r" // S
)

// encodeCandidate returns c as an entry of the candidates map.
func encodeCandidate(c rows.Candidate) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		candidateIdentity: s(c.Identity),
		candidatePriority: &types.AttributeValueMemberN{Value: strconv.FormatInt(c.Priority, 10)},
		candidateRVN:      s(c.RVN),
	}}
}

// decodeCandidates reads the candidates attribute of a row, in ticket
// order. An entry it cannot read (a later version's, a hand edit) is left
// out: entries are advice, and one of them must not make the row, and so
// the election, unreadable. A candidates attribute that is not a map is
// an invalid record.
func decodeCandidates(item map[string]types.AttributeValue) ([]rows.Candidate, error) {
	v, ok := item[attrCandidates]
	if !ok {
		return nil, nil
	}
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return nil, wrongType(attrCandidates, "M", v)
	}
	if len(m.Value) == 0 {
		return nil, nil
	}
	cands := make([]rows.Candidate, 0, len(m.Value))
	for ticket, e := range m.Value {
		em, _ := e.(*types.AttributeValueMemberM)
		if em == nil {
			continue
		}
		o, _ := em.Value[candidateIdentity].(*types.AttributeValueMemberS)
		n, _ := em.Value[candidatePriority].(*types.AttributeValueMemberN)
		r, _ := em.Value[candidateRVN].(*types.AttributeValueMemberS)
		if o == nil || n == nil || r == nil {
			continue
		}
		p, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			continue
		}
		cands = append(cands, rows.Candidate{Ticket: ticket, Identity: o.Value, Priority: p, RVN: r.Value})
	}
	if len(cands) == 0 {
		return nil, nil
	}
	record.SortCandidates(cands)
	return cands, nil
}

// Stand sets c's entry among the row's candidates and drops the entries of
// drop, with one UpdateItem; with two when the row has no candidates map
// yet (a row written by another client), whose first answer shows it.
func (d *rowStore) Stand(ctx context.Context, key resourcelock.Key, c rows.Candidate, drop []string) (rows.Item, error) {
	if err := d.keys.checkKey(key); err != nil {
		return rows.Item{}, err
	}
	if err := record.CheckStand(c, drop); err != nil {
		return rows.Item{}, err
	}
	it, err := d.stand(ctx, key, c, drop, true)
	cur, found := rows.CurrentItem(err)
	switch {
	case err == nil || !errors.Is(err, resourcelock.ErrConflict):
		return it, err
	case !found:
		return it, fmt.Errorf("%s: stand: %w", d.describeKey(key), resourcelock.ErrNotFound)
	case c.Ticket == "" && cur.Candidates == nil:
		return cur, nil // nothing to drop
	case cur.Candidates != nil:
		return it, err // full
	}
	// No map yet: make it, with c's entry alone.
	it, err = d.stand(ctx, key, c, nil, false)
	if _, found := rows.CurrentItem(err); errors.Is(err, resourcelock.ErrConflict) && !found {
		return it, fmt.Errorf("%s: stand: %w", d.describeKey(key), resourcelock.ErrNotFound)
	}
	if errors.Is(err, resourcelock.ErrConflict) {
		// Another candidate made the map meanwhile: write into it.
		return d.stand(ctx, key, c, drop, true)
	}
	return it, err
}

// stand sends one Stand: into the row's candidates map (hasMap), or making
// the map with c's entry alone on a row that has none.
func (d *Store) stand(ctx context.Context, key resourcelock.Key, c rows.Candidate, drop []string, hasMap bool) (rows.Item, error) {
	e := newExpression()
	var u updateClauses
	cands := e.name(attrCandidates)
	cond := "attribute_exists(" + e.name(d.keys.partitionKey) + ")"
	if !hasMap {
		u.set(e, attrCandidates, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{c.Ticket: encodeCandidate(c)}})
		return d.update(ctx, key, "stand", e, u.expression(""), cond+" AND attribute_not_exists("+cands+")")
	}
	cond += " AND attribute_exists(" + cands + ")"
	if c.Ticket != "" {
		entry := cands + "." + e.name(c.Ticket)
		u.setPath(entry, e.value(encodeCandidate(c)))
		cond += " AND (attribute_exists(" + entry + ") OR size(" + cands + ") < " +
			e.value(&types.AttributeValueMemberN{Value: strconv.Itoa(rows.MaxCandidates)}) + ")"
	}
	for _, t := range drop {
		if t != c.Ticket {
			u.removePath(cands + "." + e.name(t))
		}
	}
	return d.update(ctx, key, "stand", e, u.expression(""), cond)
}
