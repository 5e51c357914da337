package main

import (
	"testing"
	"time"
)

// The kill-queued figures from logs made up for the purpose: a dead
// waiter's turn delays the others by how long the next holder had to wait
// after the hand-over, or after it came if it came later; a worker killed
// while it held a lock is not counted as a queued one; a delay past the
// bound is counted as such.
func TestDeadWaitersDelay(t *testing.T) {
	ms := func(n int) int64 { return int64(n) * int64(time.Millisecond) }
	acquire := func(phase string, at int) Event {
		return Event{Ev: "acquire", Role: "lock:k0", Phase: phase, T: ms(at)}
	}
	term := func(tok int64, start, until int) Event {
		return Event{Ev: "term", Role: "lock:k0", Token: tok, T: ms(start + 2), Start: ms(start), Until: ms(until)}
	}
	end := func(at int, how string) Event { return Event{Ev: "end", Role: "lock:k0", T: ms(at), Detail: how} }
	proc := func(name string, evs ...Event) *procLog {
		return &procLog{in: &instance{name: name}, events: evs, terms: buildTerms(name, evs)}
	}
	nemesis := func(action string, at int) Event {
		return Event{Ev: "nemesis", Action: action, Worker: "w2#2", Role: "lock:k0", T: ms(at)}
	}
	check := func(waiter *procLog, victim *procLog, outcome string) DeadWaiters {
		ch := &checker{
			cfg: runConfig{lockLease: 2 * time.Second, retry: 200 * time.Millisecond}, rtt: time.Millisecond, r: &Report{},
			procs: []*procLog{
				proc("w1#1", acquire("begin", 0), acquire("end", 10), term(1, 5, 1800), end(1000, "release")),
				victim, waiter,
			},
			nemesis: []Event{nemesis("kill-queued", 200), nemesis(outcome, 1100)},
		}
		ch.deadWaiters()
		return ch.r.DeadWaiters
	}
	queued := proc("w2#2", acquire("begin", 100))

	// w3 waits from 150; the lock is handed to the dead w2 at 1000; w3
	// takes it over 2.1 s later.
	d := check(proc("w3#3", acquire("begin", 150), acquire("end", 3110), term(2, 3100, 4900)), queued, "queued-turn")
	if d.Kills != 1 || len(d.Delay.Values) != 1 || d.Delay.Values[0] != 2.1 || d.Delay.OverBound != 0 {
		t.Errorf("waiter there at the hand-over: %+v, want one delay of 2.1 s within the bound", d)
	}
	// w3 comes 3 s after the hand-over and takes the lock 2.05 s later:
	// the lock stood unused longer, but nobody waited more than 2.05 s.
	d = check(proc("w3#3", acquire("begin", 4000), acquire("end", 6060), term(2, 6050, 7850)), queued, "queued-turn")
	if len(d.Delay.Values) != 1 || d.Delay.Values[0] != 2.05 || d.Idle.Values[0] != 5.05 {
		t.Errorf("waiter come later: %+v, want one delay of 2.05 s, the lock handed to the dead for 5.05 s", d)
	}
	// w4 waits from 150 and gives up at 2150; w3 comes at 2500 and takes
	// the lock at 4500: it stood handed to the dead 3.5 s, and the
	// others waited 2 s at most without giving up.
	gaveUp := acquire("end", 2150)
	gaveUp.Err = "lock: held by another owner"
	w4 := proc("w4#4", acquire("begin", 150), gaveUp)
	ch := &checker{
		cfg: runConfig{lockLease: 2 * time.Second, retry: 200 * time.Millisecond}, rtt: time.Millisecond, r: &Report{},
		procs: []*procLog{
			proc("w1#1", acquire("begin", 0), acquire("end", 10), term(1, 5, 1800), end(1000, "release")),
			queued, w4, proc("w3#3", acquire("begin", 2500), acquire("end", 4510), term(2, 4500, 6300)),
		},
		nemesis: []Event{nemesis("kill-queued", 200), nemesis("queued-turn", 1100)},
	}
	ch.deadWaiters()
	if d := ch.r.DeadWaiters; d.Idle.Values[0] != 3.5 || d.Idle.OverBound != 1 || d.Delay.Values[0] != 2 || d.Delay.OverBound != 0 || d.GaveUp != 1 {
		t.Errorf("waiter that gave up, another come later: %+v, want the lock handed to the dead 3.5 s, over the bound, a delay of 2 s within it, one Acquire given up", d)
	}
	// A waiter that gave up during the dead waiter's lease and asked again
	// at once waited from the hand-over.
	d = check(proc("w3#3", acquire("begin", 150), gaveUp, acquire("begin", 2160), acquire("end", 3110), term(2, 3100, 4900)), queued, "queued-turn")
	if len(d.Delay.Values) != 1 || d.Delay.Values[0] != 2.1 || d.GaveUp != 1 {
		t.Errorf("waiter that asked again: %+v, want one delay of 2.1 s and one Acquire that gave up", d)
	}
	// Taken over 3 s after the hand-over: over the bound, and said so.
	d = check(proc("w3#3", acquire("begin", 150), acquire("end", 4010), term(2, 4000, 5800)), queued, "queued-turn")
	if len(d.Delay.Values) != 1 || d.Delay.OverBound != 1 {
		t.Errorf("slow takeover: %+v, want one delay over the bound", d)
	}
	// Killed just after it acquired the lock: not a queued waiter.
	holding := proc("w2#2", acquire("begin", 100), acquire("end", 190), term(3, 180, 1980))
	d = check(proc("w3#3", acquire("begin", 150), acquire("end", 3110), term(2, 3100, 4900)), holding, "queued-gone")
	if d.Kills != 1 || d.Missed != 1 || len(d.Delay.Values) != 0 {
		t.Errorf("killed while holding: %+v, want it counted as missed and nothing measured", d)
	}
	// The row deleted before its turn.
	d = check(proc("w3#3", acquire("begin", 150)), queued, "queued-gone")
	if d.Gone != 1 || len(d.Delay.Values) != 0 {
		t.Errorf("entry gone: %+v, want it counted as gone", d)
	}
}
