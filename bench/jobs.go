package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/schedule"
)

// Row 10's settings: three instances, leases of 2 s, a slot every 3 s.
const (
	jobLease     = 2 * time.Second
	jobHeartbeat = 500 * time.Millisecond
	jobRefresh   = 200 * time.Millisecond
	jobEvery     = 3 * time.Second
	jobTrials    = 6
	jobSteadyS   = 12
)

type jobsResult struct {
	Instances int     `json:"instances"`
	LeaseS    float64 `json:"lease_s"`
	EveryS    float64 `json:"every_s"`
	// Lateness of the slot after the instance running the job was cut off
	// (its requests hang from then on, its run still holding the lock),
	// just before that slot.
	Trials        int       `json:"trials"`
	LatenessMs    []float64 `json:"lateness_after_cutoff_ms"`
	LatenessP50Ms float64   `json:"lateness_after_cutoff_p50_ms"`
	LatenessMaxMs float64   `json:"lateness_after_cutoff_max_ms"`
	// Steady state: slots run, their lateness, and the DynamoDB requests
	// of the three instances per slot.
	SteadySlots       int              `json:"steady_slots"`
	SteadyLatenessP50 float64          `json:"steady_lateness_p50_ms"`
	RequestsPerSlot   float64          `json:"requests_per_slot"`
	RequestsByOp      map[string]int64 `json:"requests_by_operation"`
	StartedTwice      int              `json:"slots_started_twice"`
	FailedTrials      []string         `json:"failed_trials,omitempty"`
}

// jobInstance is one instance of the fleet: a lock client behind its own
// fault-injecting transport, and a scheduler.
type jobInstance struct {
	ft     *faulthttp.Transport
	locks  *lock.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// jobFleet runs job (its Run given by run) on n instances; onEvent sees every
// instance's events, by index.
func (b *bench) jobFleet(ctx context.Context, table string, ctr *counter, n int, job schedule.Job, onEvent func(int, schedule.Event)) ([]*jobInstance, error) {
	var out []*jobInstance
	for i := range n {
		ft := faulthttp.New(b.clients.baseTransport())
		lc, err := newLocks(b.clients.client(ctr, ft), table, lock.Config{Identity: fmt.Sprintf("instance-%d-%s", i, b.runID),
			LeaseDuration: jobLease, HeartbeatPeriod: jobHeartbeat, RefreshPeriod: jobRefresh})
		if err != nil {
			return nil, err
		}
		s, err := schedule.New(schedule.Config{Locks: lc, OnEvent: func(e schedule.Event) { onEvent(i, e) }}, job)
		if err != nil {
			return nil, err
		}
		ictx, cancel := context.WithCancel(ctx)
		in := &jobInstance{ft: ft, locks: lc, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(in.done)
			_ = s.Run(ictx)
		}()
		out = append(out, in)
	}
	return out, nil
}

func stopFleet(fleet []*jobInstance) {
	for _, in := range fleet {
		in.ft.Clear()
		in.cancel()
	}
	for _, in := range fleet {
		<-in.done
		in.locks.Close(context.Background())
	}
}

// rowJobs is row 10: scheduled jobs on three instances. Each trial cuts off
// the instance whose run holds the job's lock just before the next slot,
// and measures how late that slot starts on another; a steady phase counts
// the requests per slot.
func (b *bench) rowJobs(ctx context.Context) error {
	table, err := b.table(ctx, "jobs")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	res := &jobsResult{Instances: 3, LeaseS: jobLease.Seconds(), EveryS: jobEvery.Seconds(), Trials: jobTrials}
	b.res.Jobs = res
	every, err := schedule.Every(jobEvery)
	if err != nil {
		return err
	}
	var lateness []time.Duration
	for trial := range jobTrials {
		d, err := b.jobTrial(ctx, table, every, trial)
		if err != nil {
			res.FailedTrials = append(res.FailedTrials, fmt.Sprintf("trial %d: %v", trial, err))
			continue
		}
		lateness = append(lateness, d)
		res.LatenessMs = append(res.LatenessMs, ms(d))
	}
	res.LatenessP50Ms, res.LatenessMaxMs = ms(median(lateness)), ms(quantile(lateness, 1))
	return b.jobSteady(ctx, table, res)
}

// jobTrial runs one trial on a fresh job: the instance running the first
// slot is cut off 300 ms before the next, its run still going, and the
// next slot's start on another instance is timed from the slot.
func (b *bench) jobTrial(ctx context.Context, table string, every schedule.Schedule, trial int) (time.Duration, error) {
	type start struct {
		instance int
		e        schedule.Event
	}
	starts := make(chan start, 16)
	job := schedule.Job{Name: fmt.Sprintf("trial-%d-%s", trial, b.runID), Schedule: every,
		Run: func(ctx context.Context, r schedule.Run) error {
			<-ctx.Done() // runs hold the lock until cut off or stopped
			return nil
		}}
	fleet, err := b.jobFleet(ctx, table, newCounter(), 3, job, func(i int, e schedule.Event) {
		if e.Kind == schedule.EventStarted {
			starts <- start{i, e}
		}
	})
	if err != nil {
		return 0, err
	}
	defer stopFleet(fleet)
	var first start
	select {
	case first = <-starts:
	case <-time.After(3 * jobEvery):
		return 0, errors.New("no slot started")
	}
	next := every.Next(first.e.Slot)
	time.Sleep(time.Until(next.Add(-300 * time.Millisecond)))
	victim := fleet[first.instance]
	victim.ft.Add(faulthttp.Rule{Fault: faulthttp.Delay(time.Hour)}) // every request hangs: a crash
	victim.cancel()
	for {
		select {
		case s := <-starts:
			if s.instance == first.instance || s.e.Slot.Before(next) {
				continue
			}
			return s.e.Lateness, nil
		case <-time.After(5 * jobEvery):
			return 0, fmt.Errorf("no other instance started a slot after %v", next)
		}
	}
}

// jobSteady runs a job of short runs on three instances for jobSteadyS
// seconds and counts slots, starts and requests.
func (b *bench) jobSteady(ctx context.Context, table string, res *jobsResult) error {
	every, err := schedule.Every(time.Second)
	if err != nil {
		return err
	}
	ctr := newCounter()
	var (
		mu       sync.Mutex
		started  = map[time.Time]int{}
		lateness []time.Duration
	)
	job := schedule.Job{Name: "steady-" + b.runID, Schedule: every,
		Run: func(context.Context, schedule.Run) error { time.Sleep(50 * time.Millisecond); return nil }}
	before := ctr.snapshot()
	fleet, err := b.jobFleet(ctx, table, ctr, 3, job, func(_ int, e schedule.Event) {
		if e.Kind == schedule.EventStarted {
			mu.Lock()
			started[e.Slot]++
			lateness = append(lateness, e.Lateness)
			mu.Unlock()
		}
	})
	if err != nil {
		return err
	}
	time.Sleep(jobSteadyS * time.Second)
	stopFleet(fleet)
	d := ctr.since(before)
	mu.Lock()
	defer mu.Unlock()
	res.SteadySlots = len(started)
	for _, n := range started {
		if n > 1 {
			res.StartedTwice++
		}
	}
	res.SteadyLatenessP50 = ms(median(lateness))
	res.RequestsByOp = d.attempts
	if len(started) > 0 {
		res.RequestsPerSlot = round2(float64(total(d.attempts)) / float64(len(started)))
	}
	return nil
}

func printJobs(w io.Writer, r *results) {
	j := r.Jobs
	if j == nil {
		return
	}
	section(w, fmt.Sprintf("10. Scheduled jobs: %d instances, lease %v, a slot every %v", j.Instances, jobLease, jobEvery))
	fmt.Fprintf(w, "  after a cut-off   the instance running the job cut off 300 ms before a slot, its run holding the lock: the slot started late by median %s, max %s over %d trials (%d failed)\n",
		msStr(j.LatenessP50Ms), msStr(j.LatenessMaxMs), len(j.LatenessMs), len(j.FailedTrials))
	fmt.Fprintf(w, "  lateness, ms      %v\n", j.LatenessMs)
	fmt.Fprintf(w, "  steady            a slot every 1 s for %d s: %d slots, lateness p50 %s, %.2f requests per slot (all three instances) %v, slots started twice %d (must be 0)\n",
		jobSteadyS, j.SteadySlots, msStr(j.SteadyLatenessP50), j.RequestsPerSlot, j.RequestsByOp, j.StartedTwice)
	for _, f := range j.FailedTrials {
		fmt.Fprintf(w, "  failed            %s\n", f)
	}
}
