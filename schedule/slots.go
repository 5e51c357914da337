package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/dynalease/dynalease"
)

// Schedule names a job's slots: the instants it is due.
type Schedule interface {
	// Next returns the first slot strictly after t, or the zero time when
	// there is none.
	Next(t time.Time) time.Time
}

// minInterval is the shortest interval Every accepts, and the resolution
// of slots: a slot is a whole millisecond.
const minInterval = time.Second

// Every returns the schedule of a slot every d, at the multiples of d
// since the Unix epoch, so that every instance of a fleet names the same
// slots whenever it started. d must be at least a second.
func Every(d time.Duration) (Schedule, error) {
	if d < minInterval {
		return nil, &dynalease.InvalidError{Field: "Every", Reason: fmt.Sprintf("interval %v is below %v", d, minInterval)}
	}
	return every(d), nil
}

type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e).Milliseconds()
	ms := t.UnixMilli()
	next := (ms/d + 1) * d
	if ms < 0 && ms%d != 0 {
		next -= d
	}
	return time.UnixMilli(next).UTC()
}

// Cron returns the schedule of a cron expression in loc (UTC when nil):
// the standard five fields, or a descriptor (@hourly, @daily, …), parsed by
// github.com/robfig/cron/v3's standard parser; "@every D" is Every(D), at
// the multiples of D since the epoch (robfig counts it from when it is
// asked, which would give each instance slots of its own). Slots are
// instants: on a daylight-saving change a local time that does not exist
// names no slot, and one that happens twice names one slot, the first.
func Cron(spec string, loc *time.Location) (Schedule, error) {
	if rest, ok := strings.CutPrefix(spec, "@every "); ok {
		// robfig counts @every from the time it is asked, which differs
		// between instances: the fleet's slots must be one set.
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, &dynalease.InvalidError{Field: "Cron", Reason: fmt.Sprintf("spec %q", spec), Err: err}
		}
		return Every(d)
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, &dynalease.InvalidError{Field: "Cron", Reason: fmt.Sprintf("spec %q", spec), Err: err}
	}
	if loc == nil {
		loc = time.UTC
	}
	return cronSchedule{spec: s, loc: loc}, nil
}

type cronSchedule struct {
	spec cron.Schedule
	loc  *time.Location
}

func (c cronSchedule) Next(t time.Time) time.Time {
	for range 10_000 { // the slots of a repeated hour, every second at most
		n := c.spec.Next(t.In(c.loc))
		if n.IsZero() || !c.repeated(n) {
			return n.UTC().Truncate(time.Millisecond)
		}
		t = n
	}
	return time.Time{}
}

// repeated reports whether n's local time happened before, earlier in a
// daylight-saving change that set the clocks back.
func (c cronSchedule) repeated(n time.Time) bool {
	_, after := n.In(c.loc).Zone()
	_, before := n.Add(-3 * time.Hour).In(c.loc).Zone()
	if before <= after {
		return false
	}
	e := n.Add(-time.Duration(before-after) * time.Second)
	_, at := e.In(c.loc).Zone()
	return at == before
}

// latest returns the slots of s after from and at or before now, oldest
// first: the latest max of them, and how many there are. from is a slot
// already handled, or the zero time; it looks back no further than
// horizon before now.
func latest(s Schedule, from, now time.Time, horizon time.Duration, max int) ([]time.Time, int) {
	start := now.Add(-horizon)
	if from.After(start) {
		start = from
	}
	var out []time.Time
	n := 0
	for t := s.Next(start); !t.IsZero() && !t.After(now); t = s.Next(t) {
		n++
		if len(out) == max {
			copy(out, out[1:])
			out = out[:max-1]
		}
		out = append(out, t)
	}
	return out, n
}
