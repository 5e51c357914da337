package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
)

// exclusive are the kinds of term that hold a key alone: a lock, a set's
// member, a permit's slot, a job's run (a reader holds it with other
// readers, never with these).
var exclusive = []string{"lock", "set", "permit", "job"}

// Check runs every check of the history's safety, and of its liveness
// once the faults stopped, and returns what failed.
func (h *History) Check(end, quiet time.Time) []string {
	h.closeAll()
	h.checkHandedOut()
	h.checkOverlaps()
	h.checkElections()
	h.checkPermits()
	h.checkTokens()
	h.checkGuarded()
	h.checkSlots()
	h.checkWaits(end, quiet)
	h.checkUpgrades(end)
	h.checkSpin()
	if s := h.w.Spun(); s != "" {
		h.Fail("spin: %s", s)
	}
	return h.Failures
}

// overlap reports whether a and b were believed held at one instant (a
// term that ends as it begins was never believed).
func overlap(a, b *Term) bool {
	return a.Begin.Before(a.End) && b.Begin.Before(b.End) && a.Begin.Before(b.End) && b.Begin.Before(a.End)
}

// byKey returns the terms of kinds on each key.
func (h *History) byKey(kinds ...string) map[string][]*Term {
	m := map[string][]*Term{}
	for _, t := range h.sortedTerms(kinds...) {
		for _, k := range t.Keys {
			m[k] = append(m[k], t)
		}
	}
	return m
}

// checkHandedOut: an acquisition hands out a hold that is held: a term
// whose hold was never valid at its beginning was handed out over.
func (h *History) checkHandedOut() {
	for _, t := range h.Terms {
		if t.Kind != "elect" && !t.heldAtBegin {
			h.Fail("handed out over: %s's %s of %v was not held when its acquisition returned at %s", t.Process, t.Kind, t.Keys, at(t.Begin))
		}
	}
}

// checkOverlaps: never two holders of a key alone, nor one beside a
// reader.
func (h *History) checkOverlaps() {
	for key, ts := range h.byKey(append(slices.Clone(exclusive), "read")...) {
		for i, t := range ts {
			for _, u := range ts[i+1:] {
				if !u.Begin.Before(t.End) {
					break
				}
				if t.Kind == "read" && u.Kind == "read" || !overlap(t, u) {
					continue
				}
				h.Fail("overlap on %s: %s's %s [%s, %s] and %s's %s [%s, %s]", key,
					t.Process, t.Kind, at(t.Begin), at(t.End), u.Process, u.Kind, at(u.Begin), at(u.End))
			}
		}
	}
}

// checkElections: never two leaders of an election.
func (h *History) checkElections() {
	for name, ts := range h.byKey("elect") {
		for i, t := range ts {
			for _, u := range ts[i+1:] {
				if !u.Begin.Before(t.End) {
					break
				}
				if overlap(t, u) {
					h.Fail("two leaders of %s: %s [%s, %s] and %s [%s, %s]", name, t.Process, at(t.Begin), at(t.End), u.Process, at(u.Begin), at(u.End))
				}
			}
		}
	}
}

// checkPermits: never more holders of a semaphore than its permits.
func (h *History) checkPermits() {
	byName := map[string][]*Term{}
	for _, t := range h.sortedTerms("permit") {
		byName[t.Note] = append(byName[t.Note], t)
	}
	for name, ts := range byName {
		for _, t := range ts {
			n := 0
			for _, u := range ts {
				if !u.Begin.After(t.Begin) && t.Begin.Before(u.End) {
					n++
				}
			}
			if n > t.Permits {
				h.Fail("%d holders of %s's %d permits at %s", n, name, t.Permits, at(t.Begin))
			}
		}
	}
}

// checkTokens: on each key, a term that began after another ended has a
// larger fencing token (readers that shared a hold share one).
func (h *History) checkTokens() {
	for key, ts := range h.byKey(append(slices.Clone(exclusive), "read", "elect")...) {
		for i, u := range ts {
			for _, t := range ts[:i] {
				if t.End.After(u.Begin) || (t.Kind == "read" && u.Kind == "read") || t.Token == 0 || u.Token == 0 {
					continue
				}
				if u.Token <= t.Token {
					h.Fail("token on %s: %s's %s from %s has %x, not above %x of %s's %s that ended at %s", key,
						u.Process, u.Kind, at(u.Begin), u.Token, t.Token, t.Process, t.Kind, at(t.End))
				}
			}
		}
	}
}

// checkGuarded: a guarded write committed only while nobody else believed
// it held the key.
func (h *History) checkGuarded() {
	terms := h.byKey(append(slices.Clone(exclusive), "read", "elect")...)
	for _, g := range h.Guarded {
		for _, k := range g.Holding.Keys {
			for _, t := range terms[k.Partition] {
				if t.Process != g.Process && !g.At.Before(t.Begin) && g.At.Before(t.End) {
					h.Fail("guarded write of %s to %s at %s, inside %s's %s [%s, %s]", g.Process, k, at(g.At), t.Process, t.Kind, at(t.Begin), at(t.End))
				}
			}
		}
	}
}

// checkSlots: each attempt of a job's slot starts once, and no slot starts
// after a later one started.
func (h *History) checkSlots() {
	type attempt struct {
		job     string
		slot    int64
		attempt int
	}
	seen := map[attempt]SlotRun{}
	latest := map[string]SlotRun{}
	for _, s := range h.Slots {
		a := attempt{s.Job, s.Slot.UnixNano(), s.Attempt}
		if prev, ok := seen[a]; ok {
			h.Fail("slot %s of %s attempt %d started twice: by %s at %s and by %s at %s", s.Slot.Format(time.TimeOnly), s.Job, s.Attempt, prev.Process, at(prev.At), s.Process, at(s.At))
		}
		seen[a] = s
		if l, ok := latest[s.Job]; ok && s.Slot.Before(l.Slot) {
			h.Fail("slot %s of %s started at %s, after the later slot %s had", s.Slot.Format(time.TimeOnly), s.Job, at(s.At), l.Slot.Format(time.TimeOnly))
		}
		if l, ok := latest[s.Job]; !ok || s.Slot.After(l.Slot) {
			latest[s.Job] = s
		}
	}
}

// checkWaits: once the faults stopped and every pause ended (quiet),
// every wait that began acquires within its bound.
func (h *History) checkWaits(end, quiet time.Time) {
	for _, wt := range h.Waits {
		if wt.Start.Before(quiet) && wt.End.IsZero() && wt.Bound > 0 && end.Sub(quiet) > wt.Bound && !h.crashed(wt.Process) {
			h.Fail("liveness: %s's %s of %s from %s, during the faults, was still waiting at the end, %v after they stopped (bound %v)", wt.Process, wt.Kind, wt.Key, at(wt.Start), end.Sub(quiet), wt.Bound)
		}
		if wt.Start.Before(quiet) || wt.Bound <= 0 {
			continue
		}
		switch {
		case wt.End.IsZero() && end.Sub(wt.Start) > wt.Bound:
			h.Fail("liveness: %s's %s of %s waited from %s to the end (%v), over its bound %v", wt.Process, wt.Kind, wt.Key, at(wt.Start), end.Sub(wt.Start), wt.Bound)
		case wt.End.IsZero():
		case wt.Outcome != "held" && wt.Outcome != "ended":
			h.Fail("liveness: %s's %s of %s from %s failed after %v: %s", wt.Process, wt.Kind, wt.Key, at(wt.Start), wt.End.Sub(wt.Start), wt.Outcome)
		case wt.End.Sub(wt.Start) > wt.Bound:
			h.Fail("liveness: %s's %s of %s from %s took %v, over its bound %v", wt.Process, wt.Kind, wt.Key, at(wt.Start), wt.End.Sub(wt.Start), wt.Bound)
		}
	}
}

// checkUpgrades: an upgrade whose reader ended first (released, lost,
// expired) returns within a poll and a request of that end.
func (h *History) checkUpgrades(end time.Time) {
	s := DefaultSettings
	for _, wt := range h.Waits {
		r := wt.reader
		if r == nil || r.End.IsZero() || !r.heldAtBegin {
			continue
		}
		stop := wt.End
		if stop.IsZero() {
			stop = end
		}
		if wt.Outcome == "held" || !r.End.Before(stop) || r.p.crashed {
			continue
		}
		// From when its process could act after the reader's end: the
		// end of a pause the reader ended in (a process cut off loses
		// its reader while it cannot act).
		from, ok := h.awake(r.p, r.End, stop)
		if !ok {
			continue
		}
		if late := stop.Sub(from); late > 2*s.Refresh+2*s.RequestTimeout {
			h.Fail("liveness: %s's upgrade of %s went on %v after its reader ended at %s (its process acting from %s)", wt.Process, wt.Key, late, at(r.End), at(from))
		}
	}
}

// maxRequestsPerSecond bounds a process's requests in any second of the
// world's time: a process of the histories' settings makes a few dozen;
// one that spins makes thousands.
const maxRequestsPerSecond = 400

// checkSpin: no process sends requests without waiting on its clock.
func (h *History) checkSpin() {
	for p, m := range h.perSecond {
		for s, n := range m {
			if n > maxRequestsPerSecond {
				h.Fail("spin: %s sent %d requests in second %d", p, n, s)
				break
			}
		}
	}
}

// CheckEntries checks that no entry of a row (a queue's waiter, a
// reader, a candidate) belongs to a process that stopped more than its
// bound ago: gone names each stopped process with the time it stopped.
func (h *History) CheckEntries(end time.Time, gone map[string]time.Time, bound map[string]time.Duration) {
	_ = rows.MustOpen(h.w.mem).Scan(context.Background(), "", func(it rows.Item, err error) error {
		if err != nil {
			return nil
		}
		check := func(what, identity string) {
			stopped, ok := gone[identity]
			if ok && end.Sub(stopped) > bound[what] {
				h.Fail("entry: %s's %s entry on %s outlived it by %v (bound %v)", identity, what, it.Key, end.Sub(stopped), bound[what])
			}
		}
		for _, r := range it.Readers {
			check("reader", r.Identity)
		}
		perIdentity := map[string]int{}
		for _, c := range it.Candidates {
			check("candidate", c.Identity)
			perIdentity[c.Identity]++
		}
		for identity, n := range perIdentity {
			if n > 1 {
				h.Fail("entry: %d candidate entries of %s on %s: one is a crashed process's", n, identity, it.Key)
			}
		}
		for _, q := range it.Queue {
			check("queue", q.Identity)
		}
		return nil
	})
}

// awake returns the first time from t on at which p was not paused, and
// false when it was paused from then to until (or still is).
func (h *History) awake(p *Process, t, until time.Time) (time.Time, bool) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	for _, iv := range p.pauses {
		if !t.Before(iv[0]) && t.Before(iv[1]) {
			t = iv[1]
		}
	}
	if p.paused && !t.Before(p.pausedAt) {
		return time.Time{}, false
	}
	return t, t.Before(until)
}

// crashed reports whether the process named name crashed for good.
func (h *History) crashed(name string) bool {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	gone := false
	for _, p := range h.w.procs {
		if p.Name == name {
			if !p.crashed {
				return false
			}
			gone = true
		}
	}
	return gone
}

// at formats a world time as seconds into the history.
func at(t time.Time) string { return fmt.Sprintf("%.3fs", t.Sub(Epoch).Seconds()) }

// checkLeaders: from quiet to end, no election is without a leader for
// longer than bound (a leader that died costs its lease and a poll; a
// hand-over nobody confirms, two retry periods).
func (h *History) checkLeaders(quiet, end time.Time, bound time.Duration) {
	h.closeAll()
	for name, ts := range h.byKey("elect") {
		covered := quiet
		for _, t := range ts {
			if !t.End.After(covered) {
				continue
			}
			if t.Begin.After(covered) && t.Begin.Before(end) && t.Begin.Sub(covered) > bound {
				h.Fail("liveness: %s had no leader from %s to %s (%v), over its bound %v", name, at(covered), at(t.Begin), t.Begin.Sub(covered), bound)
			}
			if t.Begin.Before(end) {
				covered = later(covered, t.End)
			}
		}
		if end.Sub(covered) > bound {
			h.Fail("liveness: %s had no leader from %s to the end (%v), over its bound %v", name, at(covered), end.Sub(covered), bound)
		}
	}
}

// checkJobs: every slot of a job due between from and to started.
func (h *History) checkJobs(from, to time.Time) {
	started := map[string]map[int64]bool{}
	for _, s := range h.Slots {
		if started[s.Job] == nil {
			started[s.Job] = map[int64]bool{}
		}
		started[s.Job][s.Slot.Unix()] = true
	}
	for job, m := range started {
		for sec := from.Unix() + 1; sec < to.Unix(); sec++ {
			if !m[sec] {
				// Slots are the wall clock's: a slot is due when the
				// processes' clocks say so, which is not the world's
				// second; count the slots started around it.
				if !m[sec-1] && !m[sec+1] {
					h.Fail("liveness: job %s's slots around %ds were never started", job, sec-Epoch.Unix())
				}
			}
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
