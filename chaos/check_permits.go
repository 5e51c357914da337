package main

import (
	"fmt"
	"slices"
	"strings"
)

// permits: check 7. At no instant are more permit terms in force than the
// semaphore has permits. Each permit is a lock on one slot, whose terms
// the overlap check holds to one holder at a time; this check holds the
// semaphore to its bound, which a client asking for more permits than the
// others (or a slot beyond the bound) would break.
func (ch *checker) permits() {
	type edge struct {
		at    int64
		delta int
		t     *term
	}
	var edges []edge
	for role, ts := range ch.termsByRole() {
		if !strings.HasPrefix(role, "permit:") {
			continue
		}
		for _, t := range ts {
			if t.begin < t.end {
				edges = append(edges, edge{t.begin, 1, t}, edge{t.end, -1, t})
			}
			ch.r.PermitHolds++
		}
	}
	// At one instant, ends before begins: a term that ends when another
	// begins does not overlap it.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp64(a.at, b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	in := map[*term]bool{}
	reported := false
	for _, e := range edges {
		if e.delta < 0 {
			delete(in, e.t)
			reported = reported && len(in) > ch.cfg.permits
			continue
		}
		in[e.t] = true
		ch.r.MaxPermitHolders = max(ch.r.MaxPermitHolders, len(in))
		if len(in) > ch.cfg.permits && !reported {
			var who []string
			for t := range in {
				who = append(who, fmt.Sprintf("%s (%s, token %d, %s to %s)", t.proc, t.role, t.token, ch.at(t.begin), ch.at(t.end)))
			}
			slices.Sort(who)
			ch.violation("permits", fmt.Sprintf("%d permit holders at once, over the %d permits: %s", len(in), ch.cfg.permits, strings.Join(who, "; ")), e.at)
			reported = true // one report per breach, however many join it
		}
	}
}

// sets counts the holds of sets: acquisitions of two keys at once, by the
// workers' logs.
func (ch *checker) sets() {
	for _, p := range ch.procs {
		for _, e := range p.events {
			if e.Ev == "acquire" && e.Phase == "end" && e.Err == "" && strings.Contains(e.Role, "+") {
				ch.r.SetHolds++
			}
		}
	}
}
