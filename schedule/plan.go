package schedule

import "time"

// step is one thing a job's loop does now: take the job's lock to start a
// slot's attempt, or only to close the slot with an outcome.
type step struct {
	slot    time.Time
	attempt int
	close   Status    // not Unfinished: close the slot so, without a run
	late    bool      // started after its deadline, by the missed-slot policy
	until   time.Time // when trying to start it gives up
}

// watches reports whether st is a step that waits on a running slot: a
// retry, or the close of a slot whose run may have died (Job.afterDeath).
func (st step) watches() bool { return st.attempt > 1 || st.close != Unfinished }

// decision is what a job's loop does next.
type decision struct {
	steps  []step
	skipTo time.Time // slots up to it are passed over (SkipMissed), missed of them
	missed int       // slots that will never run, counted here
	wake   time.Time // with no steps: when to look again
}

// plan decides, from the ledger led, the latest slot this instance has
// handled, and its clock's now, what the job's loop does. It is the job's
// policy, and only policy: whatever it decides, each start is admitted or
// refused by the ledger in the write that takes the lock.
func (j *Job) plan(led slotLedger, handled, now time.Time, horizon time.Duration) decision {
	d := j.StartingDeadline
	last := later(handled, led.slot)
	from := last
	if from.IsZero() {
		from = now.Add(-d) // a new job: only a slot still within its deadline
	}
	due, n := latest(j.Schedule, from, now, horizon, j.catchUp())
	if len(due) == 0 {
		if !led.slot.IsZero() && !led.finished(led.slot) && led.attempt < lastAttempt {
			// Whoever started it, this instance among them: a run that
			// died is settled by any instance that lives.
			return decision{steps: []step{j.afterDeath(led, now)}}
		}
		return decision{wake: j.Schedule.Next(later(now, last))}
	}
	// A newer slot supersedes an unfinished one: its start waits for the
	// lock like a retry would, and a run of the old slot that died is
	// taken over by it.
	newest := due[len(due)-1]
	onTime := !now.After(newest.Add(d))
	if onTime && n == 1 {
		return decision{steps: []step{{slot: newest, attempt: 1, until: newest.Add(d)}}}
	}
	switch j.Missed {
	case SkipMissed:
		if onTime {
			return decision{steps: []step{{slot: newest, attempt: 1, until: newest.Add(d)}}, missed: n - 1}
		}
		return decision{skipTo: newest, missed: n, wake: j.Schedule.Next(later(now, newest))}
	case RunEach:
		steps := make([]step, len(due))
		for i, s := range due {
			steps[i] = step{slot: s, attempt: 1, until: s.Add(d)}
			if now.After(steps[i].until) {
				steps[i].late, steps[i].until = true, now.Add(d)
			}
		}
		return decision{steps: steps, missed: n - len(due)}
	default: // RunLatest
		return decision{steps: []step{{slot: newest, attempt: 1, late: !onTime, until: later(newest, now).Add(d)}}, missed: n - 1}
	}
}

// afterDeath returns the step for led's slot, started and unfinished: a
// new attempt when its run may have died and retries are left within its
// deadline, or else closing it as failed. Either waits for the lock: a
// live run finishing first refuses it (the slot is done). The wait ends
// by the next slot at the latest, which the loop then plans afresh.
func (j *Job) afterDeath(led slotLedger, now time.Time) step {
	st := step{slot: led.slot, attempt: lastAttempt, close: Failed, until: now.Add(j.StartingDeadline)}
	if led.attempt <= j.Retries && !now.After(led.slot.Add(j.StartingDeadline)) {
		st = step{slot: led.slot, attempt: led.attempt + 1, until: led.slot.Add(j.StartingDeadline)}
	}
	if next := j.Schedule.Next(now); !next.IsZero() && next.Before(st.until) {
		st.until = next
	}
	return st
}

// overlapped returns the slots of j that fell due while this instance ran
// slot, from began to now, and that the overlap policy settles: with
// OverlapSkip all of them (skipped), with OverlapWait those whose starting
// deadline has passed (missed; a slot still within its deadline has
// waited, and starts now). Slots due before the run began are the plan's
// (RunEach's catch-up), not these. It returns the last of them (slot when
// none), how many there are, and the event they make.
func (j *Job) overlapped(slot, began, now time.Time, horizon time.Duration) (time.Time, int, EventKind) {
	kind := EventSkipped
	if j.Overlap == OverlapWait {
		kind = EventMissed
	}
	last, n := slot, 0
	for t := j.Schedule.Next(later(later(slot, began), now.Add(-horizon))); !t.IsZero() && !t.After(now); t = j.Schedule.Next(t) {
		if j.Overlap == OverlapWait && !now.After(t.Add(j.StartingDeadline)) {
			break
		}
		last, n = t, n+1
	}
	return last, n, kind
}

func (j *Job) catchUp() int {
	if j.Missed == RunEach {
		return j.CatchUp
	}
	return 1
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
