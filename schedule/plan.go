package schedule

import "time"

// step is one thing a job's loop does now: take the job's lock to start a
// slot's attempt, or only to close the slot with an outcome.
type step struct {
	slot    time.Time
	attempt int
	close   Outcome   // not Unfinished: close the slot so, without a run
	late    bool      // started after its deadline, by the missed-slot policy
	until   time.Time // when trying to start it gives up
}

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
func (j *Job) plan(led ledger, handled, now time.Time, horizon time.Duration) decision {
	d := j.StartingDeadline
	last := later(handled, led.slot)
	from := last
	if from.IsZero() {
		from = now.Add(-d) // a new job: only a slot still within its deadline
	}
	due, n := latest(j.Schedule, from, now, horizon, j.catchUp())
	if len(due) == 0 {
		if led.slot.After(handled) && !led.finished(led.slot) && led.attempt < lastAttempt {
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
// live run finishing first refuses it (the slot is done).
func (j *Job) afterDeath(led ledger, now time.Time) step {
	if led.attempt <= j.Retries && !now.After(led.slot.Add(j.StartingDeadline)) {
		return step{slot: led.slot, attempt: led.attempt + 1, until: led.slot.Add(j.StartingDeadline)}
	}
	return step{slot: led.slot, attempt: lastAttempt, close: Failed, until: now.Add(j.StartingDeadline)}
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
