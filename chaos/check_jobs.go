package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// jobStart is one "slot" event of a worker: a run of the chaos job.
type jobStart struct {
	proc    string
	slot    int64 // the slot, in the worker's wall-clock time base
	attempt int64
	t       int64 // when, on the shared clock
	wall    int64 // the worker's wall clock then
}

// jobs checks the scheduled chaos job (jobs.go): no slot started twice (the
// same attempt on two runs), none started after a later slot had started;
// and reports how early the earliest run started by the shared clock, and
// the slots within the run that no worker started (a figure: the nemesis
// may stop every worker at once).
func (ch *checker) jobs() {
	var starts []jobStart
	for _, p := range ch.procs {
		for _, e := range p.events {
			if e.Ev == "slot" {
				starts = append(starts, jobStart{proc: p.in.name, slot: e.Start, attempt: e.Seq, t: e.T, wall: e.Until})
			}
		}
	}
	slices.SortFunc(starts, func(a, b jobStart) int { return cmp64(a.t, b.t) })
	ch.r.JobStarts = len(starts)
	seen := map[[2]int64]jobStart{}
	var latest *jobStart
	for i, s := range starts {
		k := [2]int64{s.slot, s.attempt}
		if prev, twice := seen[k]; twice {
			ch.violation("job", fmt.Sprintf("started twice: slot %s attempt %d started on %s at %s and on %s at %s",
				slotName(s.slot), s.attempt, prev.proc, ch.at(prev.t), s.proc, ch.at(s.t)), s.t)
		}
		seen[k] = s
		if latest != nil && s.slot < latest.slot {
			ch.violation("job", fmt.Sprintf("started after a later slot: slot %s started on %s at %s, after slot %s started on %s at %s",
				slotName(s.slot), s.proc, ch.at(s.t), slotName(latest.slot), latest.proc, ch.at(latest.t)), s.t)
		}
		if latest == nil || s.slot > latest.slot {
			latest = &starts[i]
		}
		if early := time.Duration(s.slot - s.t); early > time.Duration(ch.r.JobEarliest*1e9) {
			ch.r.JobEarliest = early.Seconds()
		}
	}
	ch.r.JobSlotsNeverStarted = ch.unstartedSlots(seen)
}

// unstartedSlots counts the slots of the chaos job whose time fell in the
// run, a few seconds from its ends, that no worker started.
func (ch *checker) unstartedSlots(seen map[[2]int64]jobStart) int {
	every := ch.cfg.jobEvery.Nanoseconds()
	if every <= 0 {
		return 0
	}
	started := map[int64]bool{}
	for k := range seen {
		started[k[0]] = true
	}
	margin := (5 * time.Second).Nanoseconds()
	n := 0
	for s := (ch.began+margin)/every*every + every; s < ch.ended-margin; s += every {
		if !started[s] {
			n++
		}
	}
	return n
}

// slotName is a slot's time in its time base (the shared clock's, to the
// millisecond).
func slotName(ns int64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.3f s", float64(ns)/1e9), "")
}
