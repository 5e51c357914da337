package main

import "testing"

// The read-write check admits readers together and writers between them,
// and finds a writer holding with a reader, a reader whose token is not
// above a finished writer's, and a writer whose token is not above a finished
// reader's; the overlap and token checks leave shared terms alone.
func TestReadWriteCheckAdmitsReadersTogetherAndNoWriterAmongThem(t *testing.T) {
	run := func(terms ...*term) *Report {
		ch := &checker{r: &Report{}, procs: []*procLog{{in: &instance{name: "p"}, terms: terms}}}
		ch.overlaps()
		ch.tokens()
		ch.readWrite()
		return ch.r
	}
	ok := run(
		&term{proc: "a", role: "read:rw", token: 0, start: 90, begin: 100, end: 300},
		&term{proc: "b", role: "read:rw", token: 0, start: 140, begin: 150, end: 250},
		&term{proc: "c", role: "write:rw", token: 7, start: 300, begin: 310, end: 400}, // after both
		&term{proc: "a", role: "read:rw", token: 8, start: 400, begin: 410, end: 500},
		&term{proc: "b", role: "read:rw", token: 8, start: 420, begin: 430, end: 480}, // joined a's hold
		&term{proc: "d", role: "write:rw", token: 9, start: 500, begin: 510, end: 600},
	)
	if len(ok.Violations) != 0 || ok.MaxReaders != 2 || ok.ReadHolds != 4 || ok.WriteHolds != 2 {
		t.Errorf("readers together, writers between: %v, at most %d readers, %d / %d holds; want none, 2, 4 / 2", ok.Violations, ok.MaxReaders, ok.ReadHolds, ok.WriteHolds)
	}
	for what, terms := range map[string][]*term{
		"a writer holding with a reader": {
			{proc: "a", role: "read:rw", token: 3, start: 90, begin: 100, end: 300},
			{proc: "c", role: "write:rw", token: 4, start: 200, begin: 210, end: 400},
		},
		"a reader below a finished writer": {
			{proc: "c", role: "write:rw", token: 4, start: 90, begin: 100, end: 200},
			{proc: "a", role: "read:rw", token: 3, start: 210, begin: 220, end: 300},
		},
		"a reader with a finished writer's token": {
			{proc: "c", role: "write:rw", token: 4, start: 90, begin: 100, end: 200},
			{proc: "a", role: "read:rw", token: 4, start: 210, begin: 220, end: 300},
		},
		"a writer not above a finished reader": {
			{proc: "a", role: "read:rw", token: 4, start: 90, begin: 100, end: 200},
			{proc: "c", role: "write:rw", token: 4, start: 210, begin: 220, end: 300},
		},
	} {
		if n := run(terms...).count("rw"); n != 1 {
			t.Errorf("%s: %d violations of check 9, want 1", what, n)
		}
	}
}
