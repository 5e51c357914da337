package main

import "testing"

// The job check flags a slot attempt started twice and a slot started
// after a later one, by the shared clock, and nothing in a run of slots
// in order (a retry of a slot, attempt 2, included).
func TestJobsCheckFlagsDoubleAndOutOfOrderStarts(t *testing.T) {
	run := func(evs map[string][]Event) int {
		ch := &checker{r: &Report{}}
		for name, es := range evs {
			ch.procs = append(ch.procs, &procLog{in: &instance{name: name}, events: es})
		}
		ch.jobs()
		return ch.r.count("job")
	}
	slot := func(s, attempt, t int64) Event { return Event{Ev: "slot", Start: s, Seq: attempt, T: t, Until: t} }
	if n := run(map[string][]Event{
		"a": {slot(1000, 1, 1000), slot(3000, 1, 3001)},
		"b": {slot(2000, 1, 2002), slot(2000, 2, 2500)},
	}); n != 0 {
		t.Errorf("%d violations for slots in order", n)
	}
	if n := run(map[string][]Event{"a": {slot(1000, 1, 1000)}, "b": {slot(1000, 1, 1100)}}); n != 1 {
		t.Errorf("%d violations for a slot attempt started twice, want 1", n)
	}
	if n := run(map[string][]Event{"a": {slot(2000, 1, 2000)}, "b": {slot(1000, 1, 2100)}}); n != 1 {
		t.Errorf("%d violations for a slot started after a later one, want 1", n)
	}
}
