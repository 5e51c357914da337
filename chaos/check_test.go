package main

import (
	"testing"
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
