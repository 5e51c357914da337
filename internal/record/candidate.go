package record

import (
	"slices"
	"strings"

	"github.com/dynalease/dynalease/internal/rows"
)

// CheckStand returns an error matching dynalease.ErrInvalid when a Stand of
// c dropping drop cannot be sent: a c with a ticket and no identity or
// RVN, an empty ticket to drop, or nothing to do.
func CheckStand(c rows.Candidate, drop []string) error {
	if c.Ticket == "" && len(drop) == 0 {
		return invalid("stand sets no entry and drops none")
	}
	if c.Ticket != "" {
		if err := CheckIdentity(c.Identity); err != nil {
			return err
		}
		if c.RVN == "" {
			return invalid("candidate %s has no RVN", c.Ticket)
		}
	}
	for _, t := range drop {
		if t == "" {
			return invalid("a ticket to drop is empty")
		}
	}
	return nil
}

// Stood returns the candidates cands after a Stand of c dropping drop,
// in ticket order, and false when the Stand is refused: c would be a new
// entry of a row with rows.MaxCandidates already.
func Stood(cands []rows.Candidate, c rows.Candidate, drop []string) ([]rows.Candidate, bool) {
	out := make([]rows.Candidate, 0, len(cands)+1)
	had := false
	for _, e := range cands {
		switch {
		case e.Ticket == c.Ticket:
			had = true
		case slices.Contains(drop, e.Ticket):
		default:
			out = append(out, e)
		}
	}
	if c.Ticket != "" {
		if !had && len(cands) >= rows.MaxCandidates {
			return nil, false
		}
		out = append(out, c)
	}
	SortCandidates(out)
	if len(out) == 0 {
		return nil, true
	}
	return out, true
}

// SortCandidates puts cands in ticket order.
func SortCandidates(cands []rows.Candidate) {
	slices.SortFunc(cands, func(a, b rows.Candidate) int { return strings.Compare(a.Ticket, b.Ticket) })
}
