package rvnlease

import (
	"fmt"
	"testing"
	"time"
)

// On a clock that does not move during a request (a fake clock over the
// memory store), a read never schedules the next one at or before its own
// time, however the holder's renewals fall: each read that shows a new
// RVN (a holder renewing just before each read), and renewals exactly a
// period apart that land at the instant the rhythm expects them.
func TestARhythmNeverSchedulesAReadAtItsOwnTime(t *testing.T) {
	const period = 200 * time.Millisecond
	for name, renewsAt := range map[string]func(read int, now time.Time) bool{
		"renewed before every read": func(int, time.Time) bool { return true },
		"renewed every period": func(_ int, now time.Time) bool {
			return now.Sub(simT0)%period == 0
		},
		"renewed every other read": func(read int, _ time.Time) bool { return read%2 == 0 },
	} {
		t.Run(name, func(t *testing.T) {
			r := newRhythm(period, nil)
			now := simT0
			rvn := 0
			for read := range 10_000 {
				if renewsAt(read, now) {
					rvn++
				}
				r.saw(now, now, fmt.Sprint("rvn-", rvn), "holder", true)
				next, ok := r.next(now)
				if !ok {
					now = now.Add(period)
					continue
				}
				if !next.After(now) {
					t.Fatalf("read %d at %v showed rvn-%d and scheduled the next at %v: not after its own time", read, now.Sub(simT0), rvn, next.Sub(simT0))
				}
				now = next
			}
		})
	}
}
