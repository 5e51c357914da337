// Package candidacy times the entries of a row's candidates for election
// (rows.Item.Candidates) on the local clock, as a waiter times a
// holder's RVN: an entry is live while its RVN keeps changing.
//
// The rule: a read (or a write's answer) whose request was sent at s shows
// the row as it stood at some moment after s. An entry whose RVN the
// previous answer, sent at p, did not show was written after p. So the
// entry changed after p, on this clock, whatever the writer's clock says;
// it counts as live for Window from p. The first answer proves nothing:
// an entry seen once, unchanged since, may be a dead candidate's.
//
// Nothing here gives a hold: liveness only chooses whom a leader hands its
// lease to, and the chosen one leads only by its own write.
package candidacy

import (
	"slices"
	"sync"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
)

// Watch times the candidates of one row. It is safe for concurrent use.
type Watch struct {
	mu       sync.Mutex
	lastSent time.Time // send time of the last answer seen; zero before one
	holder   string    // the holder the last answer named; "" when released
	entries  map[string]*entry
}

type entry struct {
	c       rows.Candidate
	changed time.Time // the entry's RVN changed after this; zero when unknown
	seen    time.Time // send time of the first answer that showed this RVN
	since   time.Time // when the ticket was first seen, for ties
}

// See notes the row of an answer to a request sent at sent. Answers must
// be seen in the order their requests were sent; an older one is ignored.
func (w *Watch) See(it rows.Item, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sent.Before(w.lastSent) {
		return
	}
	if w.entries == nil {
		w.entries = map[string]*entry{}
	}
	prev := w.lastSent
	present := make(map[string]bool, len(it.Candidates))
	for _, c := range it.Candidates {
		present[c.Ticket] = true
		e, ok := w.entries[c.Ticket]
		switch {
		case !ok:
			e = &entry{c: c, changed: prev, seen: sent, since: sent}
			w.entries[c.Ticket] = e
		case e.c.RVN != c.RVN:
			e.c, e.changed, e.seen = c, prev, sent
		}
	}
	for t := range w.entries {
		if !present[t] {
			delete(w.entries, t)
		}
	}
	w.lastSent = sent
	w.holder = ""
	if !it.Released {
		w.holder = it.HolderIdentity
	}
}

// Live returns the entries whose RVN changed within window before now, in
// no particular order.
func (w *Watch) Live(now time.Time, window time.Duration) []rows.Candidate {
	w.mu.Lock()
	defer w.mu.Unlock()
	var live []rows.Candidate
	for _, e := range w.entries {
		if e.live(now, window) {
			live = append(live, e.c)
		}
	}
	return live
}

func (e *entry) live(now time.Time, window time.Duration) bool {
	return !e.changed.IsZero() && now.Sub(e.changed) <= window
}

// Best returns the live entry (see Live) of the highest priority above
// above, other than skip's ticket; among equals, the one first seen
// earliest, then the smallest ticket. It reports false when there is none.
func (w *Watch) Best(now time.Time, window time.Duration, above int64, skip string) (rows.Candidate, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best *entry
	for _, e := range w.entries {
		if e.c.Ticket == skip || e.c.Priority <= above || !e.live(now, window) {
			continue
		}
		if best == nil || e.c.Priority > best.c.Priority ||
			(e.c.Priority == best.c.Priority && (e.since.Before(best.since) || (e.since.Equal(best.since) && e.c.Ticket < best.c.Ticket))) {
			best = e
		}
	}
	if best == nil {
		return rows.Candidate{}, false
	}
	return best.c, true
}

// Named returns the live entry of identity, and whether there is one; with
// several (restarts under one identity), the one changed last.
func (w *Watch) Named(now time.Time, window time.Duration, identity string) (rows.Candidate, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var found *entry
	for _, e := range w.entries {
		if e.c.Identity == identity && e.live(now, window) && (found == nil || e.changed.After(found.changed)) {
			found = e
		}
	}
	if found == nil {
		return rows.Candidate{}, false
	}
	return found.c, true
}

// Known reports whether an entry of identity is in the last answer seen,
// live or not.
func (w *Watch) Known(identity string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.entries {
		if e.c.Identity == identity {
			return true
		}
	}
	return false
}

// Stale returns the tickets that a Stand of the entry skip, of identity
// own, may drop, as the last answer showed them:
//   - the entries of own with another ticket than skip: an earlier
//     process of the same identity (a crash before it withdrew), which
//     this candidate replaces;
//   - the entries whose RVN stayed unchanged for longer than after:
//     candidates gone long ago. Of the entries of the holder the last
//     answer named, only its current one is kept whatever its age (a
//     leader does not write its entry while it leads, and the entry shows
//     its priority): the one that changed last (then the one seen last;
//     those the watch cannot tell apart are all kept, and the leader drops
//     its identity's others itself). The others of its identity are an
//     earlier process's, judged as any entry, so that stable identities (a
//     StatefulSet's pods, host names) that crash and win again leave no
//     entry behind.
//
// It returns none when the last answer is older than fresh, since entries
// may have changed since (after this candidate's own outage, say).
// Dropping a live candidate's entry by mistake costs it nothing but its
// next write.
func (w *Watch) Stale(now time.Time, after, fresh time.Duration, skip, own string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastSent.IsZero() || now.Sub(w.lastSent) > fresh {
		return nil
	}
	current := w.currentLocked(w.holder)
	var stale []string
	for t, e := range w.entries {
		switch {
		case t == skip || current != nil && e.c.Identity == current.c.Identity && !current.newer(e):
		case own != "" && e.c.Identity == own, w.lastSent.Sub(e.seen) > after:
			stale = append(stale, t)
		}
	}
	slices.Sort(stale)
	return stale
}

// currentLocked returns the current entry of identity: the one that
// changed last, then the one seen last; nil when identity has none. An
// entry it is not newer than (the same change and sighting: the watch
// cannot tell them apart) counts as current too.
func (w *Watch) currentLocked(identity string) *entry {
	if identity == "" {
		return nil
	}
	var cur *entry
	for _, e := range w.entries {
		if e.c.Identity != identity {
			continue
		}
		if cur == nil || e.newer(cur) {
			cur = e
		}
	}
	return cur
}

// newer reports whether e is a later entry of its identity than o, as
// far as the watch can tell.
func (e *entry) newer(o *entry) bool {
	switch {
	case !e.changed.Equal(o.changed):
		return e.changed.After(o.changed)
	case !e.seen.Equal(o.seen):
		return e.seen.After(o.seen)
	}
	return false
}
