package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynalease/dynalease/lock"
)

// Row 8's settings: clients on one semaphore of semPermits permits, each
// holding a permit semHold, then working semPause before asking again.
const (
	semClients = 20
	semPermits = 3
	semHold    = 50 * time.Millisecond
	semPause   = 100 * time.Millisecond
)

// semaphoreResult is row 8's result.
type semaphoreResult struct {
	Clients          int              `json:"clients"`
	Permits          int              `json:"permits"`
	DurationS        float64          `json:"duration_s"`
	HoldMs           float64          `json:"hold_ms"`
	PauseMs          float64          `json:"pause_ms"`
	Acquisitions     int64            `json:"acquisitions"`
	AcquisitionsPerS float64          `json:"acquisitions_per_s"`
	MostHeld         int64            `json:"most_held_at_once"`
	NeverAcquired    int              `json:"clients_never_acquired"`
	MinPerClient     int64            `json:"min_acquisitions_per_client"`
	MaxPerClient     int64            `json:"max_acquisitions_per_client"`
	RequestsPerAcq   float64          `json:"requests_per_acquisition"`
	RequestsByOp     map[string]int64 `json:"requests_by_operation"`
	Errors           int64            `json:"errors"`
	FirstError       string           `json:"first_error,omitempty"`
}

// rowSemaphore is row 8: semClients clients on a semaphore of semPermits
// permits for the contention duration. Never more than semPermits hold at
// once (counted in process, between the acquisition's return and the
// release's send), and every client acquires.
func (b *bench) rowSemaphore(ctx context.Context) error {
	table, err := b.table(ctx, "semaphore")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	dur := secs(b.sc.ContentionS)
	res := &semaphoreResult{Clients: semClients, Permits: semPermits, DurationS: dur.Seconds(), HoldMs: ms(semHold), PauseMs: ms(semPause)}
	b.res.Semaphore = res
	ctr := newCounter()
	c := b.clients.client(ctr, nil)
	b.progress("  %d clients on a semaphore of %d permits for %v (hold %v, pause %v)", semClients, semPermits, dur, semHold, semPause)
	rctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var holding, most, errs atomic.Int64
	var firstErr atomic.Value
	counts := make([]atomic.Int64, semClients)
	s0 := ctr.snapshot()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range semClients {
		lc, err := newLocks(c, table, lock.Config{Identity: fmt.Sprintf("sem-%02d-%s", i, b.runID),
			LeaseDuration: contLease, RefreshPeriod: contRefresh, HeartbeatPeriod: contHeartbeat})
		if err != nil {
			return err
		}
		defer lc.Close(context.WithoutCancel(ctx))
		wg.Go(func() {
			for rctx.Err() == nil {
				l, err := lc.AcquirePermit(rctx, "sem", semPermits)
				if err != nil {
					if rctx.Err() == nil && !errors.Is(err, lock.ErrLocked) {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					continue
				}
				n := holding.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				counts[i].Add(1)
				time.Sleep(semHold)
				holding.Add(-1)
				if err := l.Release(context.WithoutCancel(rctx)); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				time.Sleep(semPause)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	d := ctr.since(s0)
	res.MostHeld, res.Errors = most.Load(), errs.Load()
	if v := firstErr.Load(); v != nil {
		res.FirstError = v.(string)
	}
	res.MinPerClient = -1
	for i := range counts {
		n := counts[i].Load()
		res.Acquisitions += n
		if n == 0 {
			res.NeverAcquired++
		}
		if res.MinPerClient < 0 || n < res.MinPerClient {
			res.MinPerClient = n
		}
		res.MaxPerClient = max(res.MaxPerClient, n)
	}
	res.AcquisitionsPerS = round2(float64(res.Acquisitions) / elapsed.Seconds())
	res.RequestsByOp = d.attempts
	if res.Acquisitions > 0 {
		res.RequestsPerAcq = round2(float64(total(d.attempts)) / float64(res.Acquisitions))
	}
	if res.MostHeld > semPermits {
		return fmt.Errorf("%d permits held at once, over %d", res.MostHeld, semPermits)
	}
	return nil
}

func printSemaphore(w io.Writer, r *results) {
	s := r.Semaphore
	if s == nil {
		return
	}
	section(w, fmt.Sprintf("8. Semaphore: %d clients on %d permits for %.0f s (hold %.0f ms, then %.0f ms of other work)", s.Clients, s.Permits, s.DurationS, s.HoldMs, s.PauseMs))
	var k kv
	k.add("acquisitions", "%d (%.1f/s); per client min %d, max %d; clients that never acquired: %d", s.Acquisitions, s.AcquisitionsPerS, s.MinPerClient, s.MaxPerClient, s.NeverAcquired)
	k.add("most held at once", "%d (bound %d)", s.MostHeld, s.Permits)
	k.add("requests", "%.1f per acquisition %v", s.RequestsPerAcq, s.RequestsByOp)
	if s.Errors > 0 {
		k.add("errors", "%d, first: %s", s.Errors, s.FirstError)
	}
	k.print(w)
}
