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
	// Delay: how long the others waited for the lock after the dead
	// waiter's turn came: from the hand-over to it (the end of the hold
	// whose release sent it), or from when somebody first waited for the
	// key after that if nobody did then, to the send of the next hold's
	// acquiring write; against the dead waiter's lease + 1.2 × the refresh
	// period + 2 round trips. Never counts turns after which nobody held
	// the lock again before the run ended.
	Delay Latencies `json:"delay"`
	// NextWait: how long the next holder itself waited after the turn
	// came (from the hand-over, or from its first Acquire of the key after
	// it), against the same bound. It differs from Delay when a waiter
	// there at the hand-over gave up (see GaveUp) and the next holder came
	// later: a waiter's timer starts at its own first read of the handed
	// RVN.
	NextWait Latencies `json:"nextWait"`
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
	return fmt.Sprintf("%d killed (not waiting after all: %d; gone before their turn: %d; no turn seen: %d; unmatched: %d); delay %v; Acquire calls that gave up meanwhile: %d; the next holder's own wait %v",
		d.Kills, d.Missed, d.Gone, d.NoTurn, d.Unmatched, d.Delay, d.GaveUp, d.NextWait)
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
	d.NextWait.Bound = d.Delay.Bound
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
			d.NextWait.Never++
			continue
		}
		// A waiter that comes after the hand-over watches the handed RVN
		// for a whole lease from its first read, as a waiter that was
		// there does from the hand-over: the delay runs from the later
		// of the hand-over and the first wait for the key after it.
		others := func(q *procLog) bool { return q != p }
		nextHolder := func(q *procLog) bool { return q.in.name == next.proc }
		d.Delay.addAt(next.start - max(from.end, ch.firstWait(k.Role, from.end, next.start, others)))
		d.NextWait.addAt(next.start - max(from.end, ch.firstWait(k.Role, from.end, next.start, nextHolder)))
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

// firstWait returns the earliest time in [from, until) at which a process
// that which accepts was inside an Acquire of role, by the processes' logs
// (an Acquire cut short by a kill lasts until the process's last event),
// or 0 when none was.
func (ch *checker) firstWait(role string, from, until int64, which func(*procLog) bool) int64 {
	var first int64
	for _, p := range ch.procs {
		if !which(p) {
			continue
		}
		var begin int64 // of the Acquire under way, 0 when none
		var last int64
		note := func(end int64) {
			if begin != 0 && begin < until && end > from {
				if t := max(begin, from); first == 0 || t < first {
					first = t
				}
			}
			begin = 0
		}
		for _, e := range p.events {
			last = max(last, e.T)
			if e.Ev != "acquire" || e.Role != role {
				continue
			}
			if e.Phase == "begin" {
				note(e.T) // (an unended one: a log cut short)
				begin = e.T
			} else {
				note(e.T)
			}
		}
		note(last)
	}
	return first
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
