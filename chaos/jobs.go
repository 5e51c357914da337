package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/schedule"
)

// The schedule workers: every worker also runs the scheduled job "chaos"
// (package schedule), a slot every jobEvery, on a wall clock of its own:
// the library's drift clock read off by an offset that the nemesis's
// "offset" action sets (seconds ahead or behind). Each run logs a "slot"
// event: Start the slot, Seq the attempt, Token the run's number, Until the
// worker's wall clock at the start, T the shared clock. The checker
// (check_jobs.go) finds slots started twice or after a later one.

// jobName is the chaos job's name.
const jobName = "chaos"

// offsetClock is the worker's wall clock for the schedule: its library
// clock (the shared clock at a drifting rate) plus an offset.
type offsetClock struct {
	clk    *driftClock
	offset *atomic.Int64 // nanoseconds
}

func (c offsetClock) Now() time.Time {
	return c.clk.Now().Add(time.Duration(c.offset.Load()))
}
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// readOffset sets the worker's wall-clock offset from its offset file (the
// nemesis's "offset" action writes it, then sends SIGUSR2); a missing file
// changes nothing.
func (w *worker) readOffset() {
	b, err := os.ReadFile(w.cfg.offsetFile)
	if err != nil {
		return
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		w.log.log(Event{Ev: "offset-refused", Worker: w.cfg.id, Detail: err.Error()})
		return
	}
	if w.offset.Swap(int64(d)) != int64(d) {
		w.log.log(Event{Ev: "offset", Worker: w.cfg.id, Detail: d.String()})
	}
}

// jobLoop runs the chaos job until ctx ends, with a lock client of its own.
func (w *worker) jobLoop(ctx context.Context) error {
	if w.cfg.jobEvery <= 0 {
		return nil
	}
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: w.ddb, Table: w.cfg.locks})
	if err != nil {
		return err
	}
	c, err := lock.New(lock.Config{Store: store, Identity: w.cfg.id + "/jobs", Clock: w.clk, LeaseDuration: w.cfg.lockLease,
		HeartbeatPeriod: w.cfg.lockLease / 6, RequestTimeout: w.cfg.lockLease / 4, RefreshPeriod: w.cfg.retry})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), w.cfg.lockLease)
		defer cancel()
		_ = c.Close(cctx)
	}()
	every, err := schedule.Every(w.cfg.jobEvery)
	if err != nil {
		return err
	}
	wall := offsetClock{clk: w.clk, offset: &w.offset}
	if w.cfg.broken == brokenLedger {
		w.brokenJobs(ctx, c, every, wall)
		return nil
	}
	s, err := schedule.New(schedule.Config{Locks: c, Clock: w.clk, WallClock: wall, OnEvent: func(e schedule.Event) {
		if e.Kind == schedule.EventMissed || e.Kind == schedule.EventSkipped {
			w.log.log(Event{Ev: "slot-missed", Worker: w.cfg.id, Role: "job", Start: e.Slot.UnixNano(), Seq: int64(e.Count)})
		}
	}}, schedule.Job{Name: jobName, Schedule: every, Run: func(ctx context.Context, r schedule.Run) error {
		w.runSlot(ctx, wall, r.Slot, r.Attempt, r.Token)
		return nil
	}})
	if err != nil {
		return err
	}
	err = s.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// runSlot is one run of the chaos job: logged at its start, then a short
// while of work.
func (w *worker) runSlot(ctx context.Context, wall offsetClock, slot time.Time, attempt int, token int64) {
	w.log.log(Event{Ev: "slot", Worker: w.cfg.id, Role: "job", Start: slot.UnixNano(), Seq: int64(attempt), Token: token, Until: wall.Now().UnixNano()})
	sleepCtx(ctx, 50*time.Millisecond+time.Duration(w.intn(200))*time.Millisecond)
}
