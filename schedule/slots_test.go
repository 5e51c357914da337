package schedule

import (
	"context"
	"errors"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, on any machine

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

func TestEveryNamesTheSameSlotsOnEveryInstance(t *testing.T) {
	s, err := Every(90 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Instances that started at different times agree on the slots.
	a := s.Next(time.Date(2026, 11, 26, 9, 0, 1, 0, time.UTC))
	b := s.Next(time.Date(2026, 11, 26, 9, 0, 59, 0, time.Local))
	if !a.Equal(b) || a.UnixMilli()%90_000 != 0 {
		t.Fatalf("slots %v and %v, want one multiple of 90 s", a, b)
	}
	if next := s.Next(a); next.Sub(a) != 90*time.Second {
		t.Fatalf("the slot after %v is %v", a, next)
	}
	if _, err := Every(time.Millisecond); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Every(1ms) = %v, want ErrInvalid", err)
	}
}

func TestCronSlotsAcrossDaylightSavingChanges(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	slots := func(spec string, from time.Time, n int) []time.Time {
		t.Helper()
		s, err := Cron(spec, ny)
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Time
		for at := from; len(out) < n; {
			at = s.Next(at)
			out = append(out, at)
		}
		return out
	}
	// 2026-03-08: 02:00 local does not happen (clocks go to 03:00). The
	// 02:30 slot of that day does not exist.
	got := slots("30 2 * * *", time.Date(2026, 3, 7, 0, 0, 0, 0, ny), 2)
	if want := time.Date(2026, 3, 7, 7, 30, 0, 0, time.UTC); !got[0].Equal(want) {
		t.Fatalf("first slot %v, want %v", got[0], want)
	}
	if d := got[1].In(ny); d.Day() != 9 || d.Hour() != 2 || d.Minute() != 30 {
		t.Fatalf("the slot after the 7th is %v, want the 9th at 02:30 (none on the 8th)", d)
	}
	// 2026-11-01: 01:00–02:00 local happens twice. The 01:30 slot of that
	// day happens once, at the first 01:30 (EDT, 05:30 UTC).
	got = slots("30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), 2)
	if want := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC); !got[0].Equal(want) {
		t.Fatalf("slot on the 1st %v, want %v", got[0], want)
	}
	if d := got[1].In(ny); d.Day() != 2 || d.Hour() != 1 {
		t.Fatalf("the slot after the first 01:30 of the 1st is %v, want the 2nd at 01:30", d)
	}
	// A slot every 15 minutes names the repeated hour's instants once
	// each by the wall clock: 01:00, 01:15, 01:30, 01:45 (EDT), then 02:00.
	got = slots("*/15 * * * *", time.Date(2026, 11, 1, 0, 50, 0, 0, ny), 5)
	wantUTC := []string{"05:00", "05:15", "05:30", "05:45", "07:00"}
	for i, s := range got {
		if s.UTC().Format("15:04") != wantUTC[i] {
			t.Fatalf("slots %v, want UTC %v", got, wantUTC)
		}
	}
	a, err := Cron("@every 90s", nil)
	if err != nil {
		t.Fatal(err)
	}
	if next := a.Next(time.Date(2026, 11, 26, 9, 0, 1, 0, time.UTC)); next.UnixMilli()%90_000 != 0 {
		t.Fatalf("@every 90s names %v, not a multiple of 90 s since the epoch", next)
	}
	if _, err := Cron("not a spec", nil); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("a bad spec: %v, want ErrInvalid", err)
	}
}

func TestASchedulerRefusesAScheduleWithoutSlots(t *testing.T) {
	never, err := Cron("0 0 30 2 *", nil) // 30 February
	if err != nil {
		t.Fatal(err)
	}
	_, _, cs := instances(t, "a")
	_, err = New(Config{Locks: cs[0]}, Job{Name: "never", Schedule: never, Run: func(context.Context, Run) error { return nil }})
	if !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("New with a schedule that never fires = %v, want ErrInvalid", err)
	}
}

// A lock client that sets a TTL would let DynamoDB delete a job's ledger
// with its row, after which a slot could start again: refused.
func TestASchedulerRefusesALockClientWithATTL(t *testing.T) {
	c, err := lock.New(lock.Config{Store: memorystore.New(), Identity: "a", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	_, err = New(Config{Locks: c}, Job{Name: "j", Schedule: minutely(t), Run: func(context.Context, Run) error { return nil }})
	if !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("New with a client that sets a TTL = %v, want ErrInvalid", err)
	}
}
