package schedule

import (
	"context"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

func minutely(t *testing.T) Schedule {
	t.Helper()
	s, err := Every(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testJob(t *testing.T, mod func(*Job)) *Job {
	j := &Job{Name: "j", Schedule: minutely(t), Run: func(context.Context, Run) error { return nil }}
	if mod != nil {
		mod(j)
	}
	if err := j.check(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	return j
}

func started(slot time.Time, attempt int) slotLedger { return slotLedger{slot: slot, attempt: attempt} }

func finished(slot time.Time) slotLedger {
	return slotLedger{slot: slot, attempt: 1, done: slot, outcome: Succeeded}
}

func TestPlan(t *testing.T) {
	m := time.Minute
	for _, tc := range []struct {
		name    string
		job     func(*Job)
		led     slotLedger
		handled time.Time
		now     time.Time
		want    []step
		skipTo  time.Time
		missed  int
		wake    time.Time
	}{
		{name: "a new job between slots waits for the next", now: t0.Add(30 * time.Second), wake: t0.Add(m)},
		{name: "a new job at its slot starts it", now: t0.Add(time.Second), want: []step{{slot: t0, attempt: 1, until: t0.Add(20 * time.Second)}}},
		{name: "a new job past the deadline does not start the old slot", now: t0.Add(21 * time.Second), wake: t0.Add(m)},
		{name: "the next slot after a finished one", led: finished(t0), now: t0.Add(m), want: []step{{slot: t0.Add(m), attempt: 1, until: t0.Add(m + 20*time.Second)}}},
		{name: "a slot started elsewhere, or here, is watched until it is settled", led: started(t0.Add(m), 1), handled: t0.Add(m), now: t0.Add(m + time.Second),
			want: []step{{slot: t0.Add(m), attempt: lastAttempt, close: Failed, until: t0.Add(m + 21*time.Second)}}},
		{name: "a slot finished elsewhere is not due here", led: finished(t0.Add(m)), handled: t0.Add(m), now: t0.Add(m + time.Second), wake: t0.Add(2 * m)},
		{name: "watching an unfinished slot ends at the next slot", led: started(t0, 1), now: t0.Add(50 * time.Second),
			want: []step{{slot: t0, attempt: lastAttempt, close: Failed, until: t0.Add(m)}}},
		{name: "a clock behind never goes back", led: finished(t0.Add(m)), now: t0.Add(m - 2*time.Second), wake: t0.Add(2 * m)},
		{name: "an unfinished run that may have died is closed as failed", led: started(t0, 1), now: t0.Add(5 * time.Second),
			want: []step{{slot: t0, attempt: lastAttempt, close: Failed, until: t0.Add(25 * time.Second)}}},
		{name: "with retries, it gets a new attempt within its deadline", job: func(j *Job) { j.Retries = 2 }, led: started(t0, 2), now: t0.Add(5 * time.Second),
			want: []step{{slot: t0, attempt: 3, until: t0.Add(20 * time.Second)}}},
		{name: "retries used up: closed as failed", job: func(j *Job) { j.Retries = 2 }, led: started(t0, 3), now: t0.Add(5 * time.Second),
			want: []step{{slot: t0, attempt: lastAttempt, close: Failed, until: t0.Add(25 * time.Second)}}},
		{name: "past its deadline a retry is a close", job: func(j *Job) { j.Retries = 2 }, led: started(t0, 1), now: t0.Add(21 * time.Second),
			want: []step{{slot: t0, attempt: lastAttempt, close: Failed, until: t0.Add(41 * time.Second)}}},
		{name: "a newer slot supersedes an unfinished one", led: started(t0, 1), now: t0.Add(m + time.Second),
			want: []step{{slot: t0.Add(m), attempt: 1, until: t0.Add(m + 20*time.Second)}}},
		{name: "missed slots: the latest runs once, late", led: finished(t0), now: t0.Add(5*m + 30*time.Second),
			want: []step{{slot: t0.Add(5 * m), attempt: 1, late: true, until: t0.Add(5*m + 50*time.Second)}}, missed: 4},
		{name: "missed slots, skipped, the latest still on time", job: func(j *Job) { j.Missed = SkipMissed }, led: finished(t0), now: t0.Add(5*m + 10*time.Second),
			want: []step{{slot: t0.Add(5 * m), attempt: 1, until: t0.Add(5*m + 20*time.Second)}}, missed: 4},
		{name: "missed slots, skipped, all late", job: func(j *Job) { j.Missed = SkipMissed }, led: finished(t0), now: t0.Add(5*m + 30*time.Second),
			skipTo: t0.Add(5 * m), missed: 5, wake: t0.Add(6 * m)},
		{name: "missed slots, each run, up to the catch-up bound", job: func(j *Job) { j.Missed = RunEach; j.CatchUp = 2 }, led: finished(t0), now: t0.Add(3*m + 10*time.Second),
			want: []step{
				{slot: t0.Add(2 * m), attempt: 1, late: true, until: t0.Add(3*m + 30*time.Second)},
				{slot: t0.Add(3 * m), attempt: 1, until: t0.Add(3*m + 20*time.Second)},
			}, missed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob(t, tc.job)
			d := j.plan(tc.led, tc.handled, tc.now, defaultHorizon)
			if len(d.steps) != len(tc.want) {
				t.Fatalf("steps %+v, want %+v", d.steps, tc.want)
			}
			for i := range d.steps {
				if d.steps[i] != tc.want[i] {
					t.Fatalf("step %d: %+v, want %+v", i, d.steps[i], tc.want[i])
				}
			}
			if !d.skipTo.Equal(tc.skipTo) || d.missed != tc.missed || !d.wake.Equal(tc.wake) {
				t.Fatalf("skipTo %v missed %d wake %v, want %v %d %v", d.skipTo, d.missed, d.wake, tc.skipTo, tc.missed, tc.wake)
			}
		})
	}
}

func TestOverlapped(t *testing.T) {
	m := time.Minute
	for _, tc := range []struct {
		name    string
		overlap OverlapPolicy
		now     time.Time
		last    time.Time
		n       int
		kind    EventKind
	}{
		{name: "a run within its minute settles nothing", now: t0.Add(50 * time.Second), last: t0, kind: EventMissed},
		{name: "waiting: a slot still within its deadline starts now", now: t0.Add(m + 10*time.Second), last: t0, kind: EventMissed},
		{name: "waiting: slots past their deadline are missed", now: t0.Add(3*m + 10*time.Second), last: t0.Add(2 * m), n: 2, kind: EventMissed},
		{name: "skipping: every slot due during the run is skipped", overlap: OverlapSkip, now: t0.Add(3*m + 10*time.Second), last: t0.Add(3 * m), n: 3, kind: EventSkipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob(t, func(j *Job) { j.Overlap = tc.overlap })
			last, n, kind := j.overlapped(t0, t0.Add(time.Second), tc.now, defaultHorizon)
			if !last.Equal(tc.last) || n != tc.n || kind != tc.kind {
				t.Fatalf("overlapped = %v, %d, %v; want %v, %d, %v", last, n, kind, tc.last, tc.n, tc.kind)
			}
		})
	}
}

// A catch-up run (RunEach) of an old slot: the slots due before it began
// are the plan's next steps, not slots it overlapped.
func TestOverlappedCountsOnlySlotsDueDuringTheRun(t *testing.T) {
	j := testJob(t, func(j *Job) { j.Overlap = OverlapSkip })
	m := time.Minute
	last, n, _ := j.overlapped(t0, t0.Add(3*m+time.Second), t0.Add(4*m+10*time.Second), defaultHorizon)
	if n != 1 || !last.Equal(t0.Add(4*m)) {
		t.Fatalf("overlapped = %v, %d; want only %v", last, n, t0.Add(4*m))
	}
}
