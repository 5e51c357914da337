package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// History is what happened in a World: the holds each process believed it
// had, the waits, the guarded writes and the slots run, on the world's
// time, and what the checks found.
type History struct {
	w        *World
	Terms    []*Term
	Waits    []*Wait
	Guarded  []GuardedWrite
	Slots    []SlotRun
	Failures []string
	open     []*Term
	// perSecond counts each process's requests in each second of the
	// world's time.
	perSecond map[string]map[int64]int
	// lastRead and sameInstantReads are, for each process and row, when
	// it last read the row and how many times at that instant.
	lastRead         map[string]time.Time
	sameInstantReads map[string]int
	// lines is a short log of what the actors did, for a failing seed.
	lines []string
}

// Term is one hold a process believed it had: of a key (a lock, a
// reader's shared hold, a permit's slot, a set's members, a job's run) or
// of a leadership, from the moment it knew (Begin) to the last instant its
// validity covered, or its giving the hold up, whichever came first (End).
type Term struct {
	Kind    string   // "lock", "read", "set", "permit", "elect", "job"
	Keys    []string // the keys held (a permit's name; an election's)
	Process string
	Token   int64
	Begin   time.Time
	End     time.Time // zero while it lasts
	Permits int       // a permit's count
	Note    string

	p         *Process
	valid     func() time.Time // nil once ended
	lastValid time.Time        // the latest validity sampled, on the world's time
	goneAt    time.Time        // when a sample first found it not held
	// heldAtBegin: the hold was valid when its acquisition returned.
	heldAtBegin bool
}

// Wait is one acquiring call of an actor: from its start to its outcome.
type Wait struct {
	Kind    string
	Key     string
	Process string
	Start   time.Time
	End     time.Time // zero while it lasts
	Bound   time.Duration
	Calm    bool   // it started after the faults stopped
	Outcome string // "held", or the error
	// reader is an upgrade's reader's term: the upgrade ends when it
	// does.
	reader *Term
}

// GuardedWrite is a guarded write that committed.
type GuardedWrite struct {
	At       time.Time
	Process  string
	Resource string
	Holding  resourcelock.Holding
}

// SlotRun is one start of a job's slot.
type SlotRun struct {
	Job     string
	Slot    time.Time
	Attempt int
	Process string
	At      time.Time
}

// requestLocked counts a request of p at the world's time.
func (h *History) requestLocked(p *Process, op, key string) {
	// Polls of an election's row by one candidate at one instant: a
	// standby that reads again without the clock moving (on a clock that
	// does not move during a request) spins, however soon it stops. (A
	// job's or a lock's loop may read one row a few times at an instant
	// for other reasons: settling a write, a job's own look.)
	if op == "get" && key == "e" {
		k := p.Name + " " + key
		if h.lastRead[k] == h.w.now {
			if h.sameInstantReads[k]++; h.sameInstantReads[k] == 3 {
				h.Failures = append(h.Failures, fmt.Sprintf("spin: %s read %s three times at %s, the clock not moving", p.Name, key, at(h.w.now)))
			}
		} else {
			h.sameInstantReads[k] = 1
		}
		h.lastRead[k] = h.w.now
	}
	if h.perSecond == nil {
		h.perSecond = map[string]map[int64]int{}
	}
	m := h.perSecond[p.Name]
	if m == nil {
		m = map[int64]int{}
		h.perSecond[p.Name] = m
	}
	m[int64(h.w.now.Sub(Epoch)/time.Second)]++
	if h.w.instantSteps > maxInstantSteps-20 {
		h.logLocked("%s %s (spinning?)", p.Name, op)
	}
}

// wroteLocked notes a write of a record that landed (or err).
func (h *History) wroteLocked(resourcelock.Key, rows.Item, error) {}

// guardedLocked records a guarded write that commits.
func (h *History) guardedLocked(p *Process, resource string, hold resourcelock.Holding) {
	h.Guarded = append(h.Guarded, GuardedWrite{At: h.w.now, Process: p.Name, Resource: resource, Holding: hold})
}

// Begin records the start of a term of p's, now. valid returns the
// hold's validity on p's clock (ValidUntil: zero once it ended); the world
// samples it after every step, so that the term's end is the last instant
// its holder believed it held.
func (h *History) Begin(kind string, keys []string, p *Process, token int64, valid func() time.Time) *Term {
	v := valid()
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	t := &Term{Kind: kind, Keys: keys, Process: p.Name, Token: token, Begin: h.w.now, p: p, valid: valid, lastValid: h.w.now, heldAtBegin: !v.IsZero()}
	if !v.IsZero() {
		t.lastValid = p.worldTime(v)
	}
	h.Terms = append(h.Terms, t)
	h.open = append(h.open, t)
	h.logLocked("%s %s %v from token %x", p.Name, kind, keys, token)
	return t
}

// End ends t: now, when its holder gave it up (released), or at the last
// validity it had.
func (h *History) End(t *Term, released bool) {
	h.sample(t.p)
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.endLocked(t, released)
}

func (h *History) endLocked(t *Term, released bool) {
	if !t.End.IsZero() {
		return
	}
	end := t.lastValid
	if !t.goneAt.IsZero() && t.goneAt.Before(end) {
		end = t.goneAt
	}
	if released && h.w.now.Before(end) {
		end = h.w.now
	}
	if end.Before(t.Begin) {
		end = t.Begin
	}
	t.End, t.valid = end, nil
	h.open = slices.DeleteFunc(h.open, func(o *Term) bool { return o == t })
	h.logLocked("%s %s %v ended (believed until %.3fs)", t.Process, t.Kind, t.Keys, end.Sub(Epoch).Seconds())
}

// sample reads the validity of the open terms of p (every one when p is
// nil), after a step, while every goroutine of the history waits, keeping
// the latest. A hold's validity changes only when its process runs, and
// its process runs only after an event of its own, which the step fired:
// the world's events (a request landing) run none of its code. A validity
// that passes with the time, with no event, is found by the next sample
// of its process or by the end's.
func (h *History) sample(p *Process) {
	h.w.mu.Lock()
	open := slices.Clone(h.open)
	h.w.mu.Unlock()
	for _, t := range open {
		if t.valid == nil || p != nil && t.p != p {
			continue
		}
		v := t.valid()
		h.w.mu.Lock()
		switch {
		case v.IsZero():
			// Not held any more: the step that just ran ended it (the
			// time has not moved since).
			if t.goneAt.IsZero() {
				t.goneAt = h.w.now
			}
		default:
			if at := t.p.worldTime(v); at.After(t.lastValid) {
				t.lastValid = at
			}
		}
		h.w.mu.Unlock()
	}
}

// closeAll ends every open term at its last validity (the history's end).
func (h *History) closeAll() {
	h.sample(nil)
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	for _, t := range slices.Clone(h.open) {
		h.endLocked(t, false)
	}
}

// StartWait records the start of an acquiring call of p's, bounded by
// bound once the faults have stopped.
func (h *History) StartWait(kind, key string, p *Process, bound time.Duration) *Wait {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	wt := &Wait{Kind: kind, Key: key, Process: p.Name, Start: h.w.now, Bound: bound, Calm: h.w.calm}
	h.Waits = append(h.Waits, wt)
	return wt
}

// EndWait records the outcome of wt.
func (h *History) EndWait(wt *Wait, err error) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	wt.End, wt.Outcome = h.w.now, "held"
	if err != nil {
		wt.Outcome = err.Error()
	}
}

// Slot records the start of a job's slot by p.
func (h *History) Slot(job string, slot time.Time, attempt int, p *Process) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.Slots = append(h.Slots, SlotRun{Job: job, Slot: slot, Attempt: attempt, Process: p.Name, At: h.w.now})
	h.logLocked("%s started %s's slot %v attempt %d", p.Name, job, slot.Format(time.TimeOnly), attempt)
}

// Log adds a line to the history's log.
func (h *History) Log(format string, args ...any) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.logLocked(format, args...)
}

func (h *History) logLocked(format string, args ...any) {
	h.lines = append(h.lines, fmt.Sprintf("%10.3fs ", h.w.now.Sub(Epoch).Seconds())+fmt.Sprintf(format, args...))
}

// Fail records a failure of a check.
func (h *History) Fail(format string, args ...any) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.Failures = append(h.Failures, fmt.Sprintf(format, args...))
}

// Tail returns the last n lines of the log.
func (h *History) Tail(n int) string {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	lines := h.lines
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Fingerprint returns a digest of what happened (the terms, waits, slots
// and guarded writes, on the world's time), to tell whether a seed made
// the same history twice.
func (h *History) Fingerprint() string {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	var b strings.Builder
	for _, t := range h.Terms {
		fmt.Fprintf(&b, "T %s %v %s %d %d %d;", t.Kind, t.Keys, t.Process, t.Token, t.Begin.UnixNano(), t.End.UnixNano())
	}
	for _, wt := range h.Waits {
		fmt.Fprintf(&b, "W %s %s %s %d %d %s;", wt.Kind, wt.Key, wt.Process, wt.Start.UnixNano(), wt.End.UnixNano(), wt.Outcome)
	}
	for _, s := range h.Slots {
		fmt.Fprintf(&b, "S %s %d %d %s %d;", s.Job, s.Slot.UnixNano(), s.Attempt, s.Process, s.At.UnixNano())
	}
	fmt.Fprintf(&b, "G %d", len(h.Guarded))
	return b.String()
}

// sortedTerms returns the terms of kind, by begin.
func (h *History) sortedTerms(kinds ...string) []*Term {
	var ts []*Term
	for _, t := range h.Terms {
		if slices.Contains(kinds, t.Kind) {
			ts = append(ts, t)
		}
	}
	slices.SortStableFunc(ts, func(a, b *Term) int { return a.Begin.Compare(b.Begin) })
	return ts
}
