package main

import (
	"testing"
	"time"
)

// The tokens check flags a pair only when the order of the landings is
// certain: a term confirmed before another's acquiring write was sent must
// have the smaller token. A write sent early, retried by the SDK and
// landing after another term came and went (found by make chaos with 5xx
// answers) is not a violation.
func TestTokensCheckFlagsOnlyCertainInversions(t *testing.T) {
	run := func(terms ...*term) int {
		ch := &checker{r: &Report{}, procs: []*procLog{{in: &instance{name: "p"}, terms: terms}}}
		ch.tokens()
		return ch.r.count("tokens")
	}
	// w5 sent at 384 and confirmed at 386 (token 444), released at 912;
	// w2's write first sent at 201, landed after 912, confirmed at 950
	// (token 445): the landings are in token order.
	retried := run(
		&term{proc: "w2", role: "lock:k1", token: 445, start: 201, begin: 950, end: 2901},
		&term{proc: "w5", role: "lock:k1", token: 444, start: 384, begin: 386, end: 912},
	)
	if retried != 0 {
		t.Errorf("%d violations for a retried write that landed late", retried)
	}
	// a confirmed at 300 with token 10; b sent at 400 with token 9.
	inverted := run(
		&term{proc: "a", role: "elect", token: 10, start: 100, begin: 300, end: 900},
		&term{proc: "b", role: "elect", token: 9, start: 400, begin: 450, end: 1900},
	)
	if inverted != 1 {
		t.Errorf("%d violations for tokens that fell, want 1", inverted)
	}
	if missing := run(&term{proc: "a", role: "elect", start: 1, begin: 2, end: 3}); missing != 1 {
		t.Errorf("%d violations for a term without a token, want 1", missing)
	}
}

// A failover counts from the old leader's last confirmed send, also when
// its term ended before its validity did: make chaos once cut a leader
// off while it was stepping down for a HandOver, and its term ended
// 170 ms into the cut, long before the lease it had last renewed ran
// out for the others.
func TestFailoverCountsFromTheLastConfirmedSend(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	for _, tc := range []struct {
		name string
		evs  []Event // the old leader's
	}{
		{"lost when its validity ran out", []Event{
			{Ev: "term", Role: "elect", T: ms(10), Start: ms(0), Until: ms(1980)},
			{Ev: "extend", Role: "elect", T: ms(220), Until: ms(2180)},
			{Ev: "end", Role: "elect", T: ms(2180), Detail: "lost: expired"},
		}},
		{"stepped down just after the cut", []Event{
			{Ev: "term", Role: "elect", T: ms(10), Start: ms(0), Until: ms(1980)},
			{Ev: "extend", Role: "elect", T: ms(220), Until: ms(2180)},
			{Ev: "end", Role: "elect", T: ms(380), Detail: "stepped down (requested) for w5"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := []Event{{Ev: "term", Role: "elect", T: ms(2215), Start: ms(2210), Until: ms(4190)}}
			ch := &checker{
				cfg:     runConfig{lease: 2 * time.Second, renew: 1980 * time.Millisecond, retry: 200 * time.Millisecond},
				nemesis: []Event{{Ev: "nemesis", Worker: "w3#3", T: ms(210), Action: "partition"}},
				r:       &Report{},
			}
			for _, p := range []struct {
				name string
				evs  []Event
			}{{"w3#3", tc.evs}, {"w2#2", next}} {
				ch.procs = append(ch.procs, &procLog{in: &instance{name: p.name}, events: p.evs, terms: buildTerms(p.name, p.evs)})
			}
			ch.liveness()
			f := ch.r.Failover
			if len(f.Values) != 1 || f.OverBound != 0 {
				t.Fatalf("failover %+v, want one within its bound", f)
			}
			if got, want := f.Values[0], 2.010; got < want-1e-9 || got > want+1e-9 {
				t.Fatalf("failover %.3f s, want %.3f s: from the send at 200 ms to the next's at 2210 ms", got, want)
			}
		})
	}
}
