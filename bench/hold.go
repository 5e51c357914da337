package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynalease/dynalease/lock"
)

// holdResult is row 5's result.
type holdResult struct {
	Locks                int     `json:"locks"`
	LeaseS               float64 `json:"lease_duration_s"`
	HeartbeatPeriodS     float64 `json:"heartbeat_period_s"`
	HeartbeatConcurrency int     `json:"heartbeat_concurrency"`

	AcquireGoroutines   int     `json:"acquire_goroutines"`
	AcquireS            float64 `json:"acquire_duration_s"`
	AcquirePerS         float64 `json:"acquisitions_per_s"`
	AcquireRequestsPerS float64 `json:"acquire_requests_per_s"`
	AcquireRatioToRaw   float64 `json:"acquire_ratio_to_raw_per_request"`
	AcquireErrors       int     `json:"acquire_errors"`

	HoldS               float64          `json:"hold_duration_s"`
	Periods             int              `json:"periods"`
	HeartbeatsPerPeriod []int64          `json:"heartbeats_per_period"`
	RequestsDuringHold  map[string]int64 `json:"requests_during_hold_by_operation"`
	ErrorsDuringHold    map[string]int64 `json:"request_errors_during_hold_by_class,omitempty"`
	LocksLost           int              `json:"locks_lost"`
	LostReasons         map[string]int   `json:"lost_reasons,omitempty"`
	MinValidityLeftS    float64          `json:"min_validity_left_at_end_s"`

	GoroutinesBefore  int `json:"goroutines_before"`
	GoroutinesMax     int `json:"goroutines_max"`
	GoroutinesMaxHold int `json:"goroutines_max_while_holding"`

	HeapBytesPerLock          float64 `json:"heap_bytes_per_held_lock"`
	HeapBytesPerLockAfterHold float64 `json:"heap_bytes_per_held_lock_after_hold"`
	// The same from a warmed client (its connections open, its maps
	// made: a first batch acquired and released by the same goroutines):
	// what each held lock adds, without the client's fixed costs, which
	// the figures above spread over the locks.
	HeapBytesPerLockWarm          float64 `json:"heap_bytes_per_held_lock_warm_client"`
	HeapBytesPerLockAfterHoldWarm float64 `json:"heap_bytes_per_held_lock_after_hold_warm_client"`

	ReleaseS      float64 `json:"release_duration_s"`
	ReleaseErrors int     `json:"release_errors"`
}

// warmHold has g goroutines acquire and release four locks each through
// lc, so that its connections are open before the heap is measured.
func warmHold(ctx context.Context, lc *lock.Client, runID string, g int) error {
	errs := make(chan error, g)
	for w := range g {
		go func() {
			for i := range 4 {
				l, err := lc.Acquire(ctx, fmt.Sprintf("warm-%s-%d-%d", runID, w, i))
				if err == nil {
					err = l.Release(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range g {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rowHold is row 5: one client holds many locks for several heartbeat
// periods.
func (b *bench) rowHold(ctx context.Context) error {
	table, err := b.table(ctx, "hold")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	n := b.sc.HoldLocks
	period, leaseDur := secs(b.sc.HoldHeartbeatS), secs(b.sc.HoldLeaseS)
	res := &holdResult{
		Locks: n, LeaseS: leaseDur.Seconds(), HeartbeatPeriodS: period.Seconds(),
		AcquireGoroutines: b.sc.acquireConcurrency,
		Periods:           b.sc.HoldPeriods,
	}
	b.res.HoldManyLocks = res

	// Goroutines, sampled every 50 ms from before the client exists until
	// after it is closed.
	var gMax, gMaxHold atomic.Int64
	var holding atomic.Bool
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			g := int64(runtime.NumGoroutine())
			if g > gMax.Load() {
				gMax.Store(g)
			}
			if holding.Load() && g > gMaxHold.Load() {
				gMaxHold.Store(g)
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()
	defer func() {
		close(stopSampling)
		sampler.Wait()
		res.GoroutinesMax, res.GoroutinesMaxHold = int(gMax.Load()), int(gMaxHold.Load())
	}()

	ctr := newCounter()
	c := b.clients.client(ctr, nil)
	locks := make([]*lock.Lock, n)
	res.GoroutinesBefore = runtime.NumGoroutine()
	heapBefore := heapInUse()

	lc, err := newLocks(c, table, lock.Config{LeaseDuration: leaseDur, HeartbeatPeriod: period})
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			lc.Close(context.Background())
		}
	}()

	if err := warmHold(ctx, lc, b.runID, b.sc.acquireConcurrency); err != nil {
		return err
	}
	heapWarm := heapInUse()

	b.progress("  acquiring %d locks with %d goroutines (lease %v, heartbeat every %v)", n, b.sc.acquireConcurrency, leaseDur, period)
	s0 := ctr.snapshot()
	start := time.Now()
	var next atomic.Int64
	var acqErrs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < b.sc.acquireConcurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				l, err := lc.Acquire(ctx, fmt.Sprintf("hold-%s-%05d", b.runID, i))
				if err != nil {
					acqErrs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				locks[i] = l
			}
		}()
	}
	wg.Wait()
	acquired := time.Since(start)
	d := ctr.since(s0)
	res.AcquireS = round2(acquired.Seconds())
	res.AcquireErrors = int(acqErrs.Load())
	res.AcquirePerS = round2(float64(n-res.AcquireErrors) / acquired.Seconds())
	res.AcquireRequestsPerS = round2(float64(total(d.attempts)) / acquired.Seconds())
	if raw := b.rawFor(8); raw != nil {
		res.AcquireRatioToRaw = round3(ratio(res.AcquireRequestsPerS, raw.RequestsPerS))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if res.AcquireErrors > 0 {
		return fmt.Errorf("%d acquisitions failed, first: %v", res.AcquireErrors, firstErr.Load())
	}
	heapHeld := heapInUse()
	res.HeapBytesPerLock = round2(float64(int64(heapHeld)-int64(heapBefore)) / float64(n))
	res.HeapBytesPerLockWarm = round2(float64(int64(heapHeld)-int64(heapWarm)) / float64(n))
	b.progress("  %d locks acquired in %.1f s; holding for %d periods (%v)", n, acquired.Seconds(), b.sc.HoldPeriods, time.Duration(b.sc.HoldPeriods)*period)

	// Hold: count the heartbeats (UpdateItem attempts) in each period.
	holding.Store(true)
	holdStart := time.Now()
	sHold := ctr.snapshot()
	prev := sHold
	for p := 1; p <= b.sc.HoldPeriods; p++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(holdStart.Add(time.Duration(p) * period))):
		}
		cur := ctr.snapshot()
		res.HeartbeatsPerPeriod = append(res.HeartbeatsPerPeriod, cur.attempts["UpdateItem"]-prev.attempts["UpdateItem"])
		b.progress("    period %d: %d heartbeats", p, res.HeartbeatsPerPeriod[p-1])
		prev = cur
	}
	holding.Store(false)
	res.HoldS = round2(time.Since(holdStart).Seconds())
	dh := ctr.since(sHold)
	res.RequestsDuringHold, res.ErrorsDuringHold = dh.attempts, dh.errs
	minLeft := time.Duration(1<<63 - 1)
	now := time.Now()
	for _, l := range locks {
		if err := l.Err(); err != nil || !l.IsHeld() {
			res.LocksLost++
			if res.LostReasons == nil {
				res.LostReasons = map[string]int{}
			}
			res.LostReasons[fmt.Sprint(err)]++
			continue
		}
		minLeft = min(minLeft, l.ValidUntil().Sub(now))
	}
	if res.LocksLost < n {
		res.MinValidityLeftS = round2(minLeft.Seconds())
	}
	heapHeld = heapInUse()
	res.HeapBytesPerLockAfterHold = round2(float64(int64(heapHeld)-int64(heapBefore)) / float64(n))
	res.HeapBytesPerLockAfterHoldWarm = round2(float64(int64(heapHeld)-int64(heapWarm)) / float64(n))

	b.progress("  releasing %d locks with %d goroutines", n, b.sc.acquireConcurrency)
	start = time.Now()
	next.Store(0)
	var relErrs atomic.Int64
	for w := 0; w < b.sc.acquireConcurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := locks[i].Release(context.Background()); err != nil {
					relErrs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	res.ReleaseS = round2(time.Since(start).Seconds())
	res.ReleaseErrors = int(relErrs.Load())
	closed = true
	return lc.Close(context.Background())
}
