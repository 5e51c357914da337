package main

import "testing"

// The permits check counts the permit terms in force at each instant: a
// term ending when another begins does not overlap it, three at once
// over two permits is one breach, and terms of other roles do not count.
func TestPermitsCheckCountsTermsInForceAtOnce(t *testing.T) {
	run := func(terms ...*term) *Report {
		ch := &checker{cfg: runConfig{permits: 2}, r: &Report{}, procs: []*procLog{{in: &instance{name: "p"}, terms: terms}}}
		ch.permits()
		return ch.r
	}
	within := run(
		&term{proc: "a", role: "permit:sem#permit-0", token: 1, begin: 100, end: 200},
		&term{proc: "b", role: "permit:sem#permit-1", token: 1, begin: 150, end: 300},
		&term{proc: "c", role: "permit:sem#permit-0", token: 2, begin: 200, end: 400}, // begins as a's ends
		&term{proc: "d", role: "lock:k1", token: 5, begin: 150, end: 400},
	)
	if n := within.count("permits"); n != 0 || within.MaxPermitHolders != 2 || within.PermitHolds != 3 {
		t.Errorf("within the bound: %d violations, at most %d at once, %d holds; want 0, 2, 3", n, within.MaxPermitHolders, within.PermitHolds)
	}
	over := run(
		&term{proc: "a", role: "permit:sem#permit-0", token: 1, begin: 100, end: 300},
		&term{proc: "b", role: "permit:sem#permit-1", token: 1, begin: 150, end: 300},
		&term{proc: "c", role: "permit:sem#permit-2", token: 1, begin: 200, end: 250},
		&term{proc: "d", role: "permit:sem#permit-2", token: 2, begin: 260, end: 280},
	)
	if n := over.count("permits"); n != 2 || over.MaxPermitHolders != 3 {
		t.Errorf("over the bound twice: %d violations, at most %d at once; want 2, 3", n, over.MaxPermitHolders)
	}
}
