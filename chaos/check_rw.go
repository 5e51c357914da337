package main

import (
	"fmt"
	"slices"
	"strings"
)

// readWrite: check 9. On a key taken shared and exclusively (roles read:K
// and write:K): no writer's term overlaps a reader's (writers against
// writers are check 1's), and no reader's belief sample lies inside a
// writer's term; a reader's token is above that of every writer whose
// term ended before the reader's acquiring write was sent (a hold of
// readers counts an acquisition when it begins), and a writer's
// token is above that of every reader whose term ended before the
// writer's acquiring write was sent.
func (ch *checker) readWrite() {
	byRole := ch.termsByRole()
	for role, readers := range byRole {
		key, ok := strings.CutPrefix(role, "read:")
		if !ok {
			continue
		}
		writers := byRole["write:"+key]
		ch.r.ReadHolds += len(readers)
		ch.r.MaxReaders = max(ch.r.MaxReaders, mostAtOnce(readers))
		for _, w := range writers {
			for _, r := range readers {
				switch {
				case r.proc != w.proc && r.begin < w.end && w.begin < r.end && r.begin < r.end && w.begin < w.end:
					ch.violation("rw", fmt.Sprintf("%s: the writer %s (token %d, %s to %s) held with the reader %s (token %d, %s to %s)",
						key, w.proc, w.token, ch.at(w.begin), ch.at(w.end), r.proc, r.token, ch.at(r.begin), ch.at(r.end)), max(r.begin, w.begin))
				case w.end <= r.start && r.token <= w.token:
					ch.violation("rw", fmt.Sprintf("%s: the reader %s from %s has token %d, not above %d of the writer %s whose term ended at %s",
						key, r.proc, ch.at(r.begin), r.token, w.token, w.proc, ch.at(w.end)), r.begin)
				case r.end <= w.start && w.token <= r.token:
					ch.violation("rw", fmt.Sprintf("%s: the writer %s from %s has token %d, not above %d of the reader %s whose term ended at %s",
						key, w.proc, ch.at(w.begin), w.token, r.token, r.proc, ch.at(r.end)), w.begin)
				}
			}
		}
		for _, p := range ch.procs {
			for _, e := range p.events {
				if e.Ev != "sample" || e.Role != role || e.Until <= e.Before {
					continue
				}
				for _, w := range writers {
					if w.proc != p.in.name && w.begin <= e.Before && e.T <= w.end {
						ch.violation("rw", fmt.Sprintf("%s sampled itself reading %s between %s and %s, inside the term of the writer %s (token %d, %s to %s)",
							p.in.name, key, ch.at(e.Before), ch.at(e.T), w.proc, w.token, ch.at(w.begin), ch.at(w.end)), e.Before)
						break
					}
				}
			}
		}
	}
	for role, writers := range byRole {
		if strings.HasPrefix(role, "write:") {
			ch.r.WriteHolds += len(writers)
		}
	}
	for _, p := range ch.procs {
		for _, e := range p.events {
			if e.Ev == "end" && e.Detail == "upgraded" {
				ch.r.Upgrades++
			}
		}
	}
}

// mostAtOnce returns the most terms of ts in force at one instant.
func mostAtOnce(ts []*term) int {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, t := range ts {
		if t.begin < t.end {
			edges = append(edges, edge{t.begin, 1}, edge{t.end, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp64(a.at, b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}
