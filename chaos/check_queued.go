package main

import (
	"fmt"
	"strings"
	"time"
)

// DeadWaiters is what the kill-queued action found: the waiters it killed
// in a row's queue, and how long each delayed the others once its turn
// came.
type DeadWaiters struct {
	Kills int `json:"kills"`
	// Missed: kills of a worker that, by its own log, was not waiting
	// for the key (it had just acquired it, or given up).
	Missed int `json:"missed"`
	// Gone: the dead entry left the queue before its turn (a release that
	// deleted the row takes the queue with it).
	Gone int `json:"gone"`
	// NoTurn: its turn did not come while the controller watched (six
	// lock leases).
	NoTurn int `json:"noTurn"`
	// Unmatched: a turn the workers' logs show no release for.
	Unmatched int `json:"unmatched"`
	// Delay: how long the others waited after the dead waiter's turn
	// came: by the waiter that had waited longest, without giving up,
	// when the next hold's acquiring write was sent, from the hand-over
	// (the end of the hold whose release sent it) or from its own start if
	// later; against the dead waiter's lease + 1.2 × the refresh period + 2
	// round trips. A waiter watches the handed RVN for a lease from its own
	// first read of it, so this is the bound for a waiter there at the
	// hand-over and for one that came later alike. A worker's next Acquire
	// of the same key within waitGap of a failed one continues its wait.
	// Never counts turns after which nobody held the lock again before the
	// run ended.
	Delay Latencies `json:"delay"`
	// Idle: from the hand-over to the send of the next hold's acquiring
	// write, the time the lock stood handed to the dead waiter, against the
	// same bound. It exceeds Delay when the waiters there at the hand-over
	// gave up (see GaveUp) and the next came later.
	Idle Latencies `json:"idle"`
	// GaveUp counts the Acquire calls of the key, by others, that failed
	// between a measured turn and the next hold: a waiter there at the
	// hand-over must watch the handed RVN for a whole lease, which its
	// budget (one lease from its own start, by default) rarely covers.
	GaveUp int `json:"gaveUp"`
}

func (d DeadWaiters) String() string {
	if d.Kills == 0 {
		return "no queued waiter killed"
	}
	return fmt.Sprintf("%d killed (not waiting after all: %d; gone before their turn: %d; no turn seen: %d; unmatched: %d); the others' wait %v; the lock handed to the dead %v; Acquire calls that gave up meanwhile: %d",
		d.Kills, d.Missed, d.Gone, d.NoTurn, d.Unmatched, d.Delay, d.Idle, d.GaveUp)
}

// deadWaiters: liveness under fair waiting, reported. For each waiter the
// kill-queued action killed in a row's queue, whether it was waiting for
// the key by its own log, and when its turn came (a release handed the
// lock to its dead entry, which the controller saw), how long until the
// next hold of the key: the others wait the dead waiter's lease, as for a
// silent holder, once.
func (ch *checker) deadWaiters() {
	d := &ch.r.DeadWaiters
	d.Delay.Bound = (ch.cfg.lockLease + ch.cfg.retry*12/10 + 2*ch.rtt).Seconds()
	d.Idle.Bound = d.Delay.Bound
	byRole := ch.termsByRole()
	for i, k := range ch.nemesis {
		if k.Ev != "nemesis" || k.Action != "kill-queued" {
			continue
		}
		d.Kills++
		p := ch.proc(k.Worker)
		if p == nil || !p.waiting(k.Role, k.T) {
			d.Missed++
			continue
		}
		var turn *Event
		for j := i + 1; j < len(ch.nemesis) && turn == nil; j++ {
			if e := ch.nemesis[j]; e.Worker == k.Worker && strings.HasPrefix(e.Action, "queued-") {
				turn = &ch.nemesis[j]
			}
		}
		switch {
		case turn == nil, turn.Action == "queued-no-turn":
			d.NoTurn++
			continue
		case turn.Action == "queued-gone":
			d.Gone++
			continue
		}
		// The hand-over: the last release of the key before the
		// controller saw it, made while the dead waiter waited.
		var from *term
		for _, t := range byRole[k.Role] {
			if t.ended && t.end <= turn.T && (from == nil || t.end > from.end) {
				from = t
			}
		}
		if from == nil || from.how != "release" || from.end < p.waitBegan(k.Role, k.T) {
			d.Unmatched++
			continue
		}
		var next *term
		for _, t := range byRole[k.Role] {
			if t.begin > turn.T {
				next = t // byRole is sorted by begin
				break
			}
		}
		if next == nil {
			d.Delay.Never++
			d.Idle.Never++
			continue
		}
		d.Delay.addAt(next.start - max(from.end, ch.longestWait(k.Role, next.start, p)))
		d.Idle.addAt(next.start - from.end)
		d.GaveUp += ch.gaveUp(k.Role, from.end, next.start, p)
	}
}

// addAt adds a measurement of d nanoseconds, counting it over the bound
// when it is.
func (l *Latencies) addAt(d int64) {
	s := time.Duration(d).Seconds()
	l.add(s)
	if s > l.Bound {
		l.OverBound++
	}
}

// waitGap is the longest pause between a worker's failed Acquire of a key
// and its next one that still counts as one wait: the worker sleeps up to
// 200 ms after a failure (lockLoop), and its client remembers the RVN it
// watched.
const waitGap = 300 * time.Millisecond

// longestWait returns when the longest wait for role under way at t, by a
// process other than dead, began (see waitGap), or 0 when none was under
// way.
func (ch *checker) longestWait(role string, t int64, dead *procLog) int64 {
	var first int64
	for _, p := range ch.procs {
		if p == dead {
			continue
		}
		for _, w := range p.waits(role) {
			if w.begin <= t && t <= w.end && (first == 0 || w.begin < first) {
				first = w.begin
			}
		}
	}
	return first
}

// wait is one wait of a process for a key: one Acquire call, or several
// that each followed a failed one within waitGap.
type wait struct {
	begin, end int64
	failed     bool // its last call failed
}

// waits returns the process's waits for role, by its log. A call that
// never ended (the process was killed) lasts until its last event.
func (p *procLog) waits(role string) []wait {
	var out []wait
	open := false
	var last int64
	for _, e := range p.events {
		last = max(last, e.T)
		if e.Ev != "acquire" || e.Role != role {
			continue
		}
		n := len(out)
		switch {
		case e.Phase != "begin":
			if n > 0 && open {
				out[n-1].end, out[n-1].failed = e.T, e.Err != ""
			}
			open = false
		case n > 0 && out[n-1].failed && e.T-out[n-1].end <= int64(waitGap):
			open = true // the wait goes on
		default:
			out = append(out, wait{begin: e.T})
			open = true
		}
	}
	if n := len(out); n > 0 && open {
		out[n-1].end = last
	}
	return out
}

// gaveUp counts the Acquire calls of role, by processes other than dead,
// that ended in an error within (from, until).
func (ch *checker) gaveUp(role string, from, until int64, dead *procLog) int {
	n := 0
	for _, p := range ch.procs {
		for _, e := range p.events {
			if p != dead && e.Ev == "acquire" && e.Role == role && e.Phase == "end" && e.Err != "" && e.T > from && e.T < until {
				n++
			}
		}
	}
	return n
}

// proc returns the process named name (identity#number), or nil.
func (ch *checker) proc(name string) *procLog {
	for _, p := range ch.procs {
		if p.in.name == name {
			return p
		}
	}
	return nil
}

// waiting reports whether the process was inside an Acquire of role at t,
// by its own log: its last acquire event before t began one of role.
func (p *procLog) waiting(role string, t int64) bool {
	return p.waitBegan(role, t) != 0
}

// waitBegan returns when the Acquire of role that the process was inside
// at t began, or 0 when it was not inside one.
func (p *procLog) waitBegan(role string, t int64) int64 {
	var last *Event
	for i, e := range p.events {
		// (Lines of one log are in time order only nearly: its
		// goroutines read the clock before they take the log's lock.)
		if e.Ev == "acquire" && e.T <= t && (last == nil || e.T >= last.T) {
			last = &p.events[i]
		}
	}
	if last == nil || last.Phase != "begin" || last.Role != role {
		return 0
	}
	return last.T
}
