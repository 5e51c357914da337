package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/lock"
)

// Row 6's settings.
const (
	contLease     = 2 * time.Second
	contRefresh   = 100 * time.Millisecond
	contHold      = 50 * time.Millisecond
	contHeartbeat = 300 * time.Millisecond // never due within a 50 ms hold
)

// contentionResult is row 6's result.
type contentionResult struct {
	Fair             bool    `json:"fair"`
	Clients          int     `json:"clients"`
	DurationS        float64 `json:"duration_s"`
	HoldMs           float64 `json:"hold_ms"`
	LeaseS           float64 `json:"lease_duration_s"`
	RefreshMs        float64 `json:"refresh_period_ms"`
	HeartbeatMs      float64 `json:"heartbeat_period_ms"`
	RequestTimeoutMs float64 `json:"request_timeout_ms"`

	Acquisitions           int64            `json:"acquisitions"`
	AcquisitionsPerS       float64          `json:"acquisitions_per_s"`
	RequestsPerS           float64          `json:"requests_per_s"`
	RequestsPerAcquisition float64          `json:"requests_per_acquisition"`
	RequestsByOp           map[string]int64 `json:"requests_by_operation"`
	// RequestsAfterRun are those sent after the run's end, as the
	// waiters give up (and, fair, leave the queue all at once).
	RequestsAfterRun     map[string]int64 `json:"requests_after_run_by_operation"`
	RequestErrors        map[string]int64 `json:"request_errors_by_class,omitempty"`
	RatioToRawPerRequest float64          `json:"ratio_to_raw_per_request"`

	WaitP50Ms         float64 `json:"wait_p50_ms"`
	WaitP99Ms         float64 `json:"wait_p99_ms"`
	LongestWaitMs     float64 `json:"longest_completed_wait_ms"`
	LongestOpenWaitMs float64 `json:"longest_unfinished_wait_ms"`
	NeverAcquired     int     `json:"clients_never_acquired"`
	MinPerClient      int64   `json:"min_acquisitions_per_client"`
	MaxPerClient      int64   `json:"max_acquisitions_per_client"`
	AcquireErrors     int64   `json:"acquire_errors"`
	ReleaseErrors     int64   `json:"release_errors"`
	Overlaps          int64   `json:"overlapping_holds"`
	// SameHolderAgain counts acquisitions by the client that held the
	// lock just before: its next Acquire right after its own Release.
	SameHolderAgain int64 `json:"acquisitions_by_previous_holder"`
	// HandOver is from a Release's return to the next Acquire's return
	// by another client.
	HandOverP50Ms float64 `json:"hand_over_p50_ms"`
	HandOverP99Ms float64 `json:"hand_over_p99_ms"`
	FirstError    string  `json:"first_error,omitempty"`
}

// rowContention is row 6: many clients, one key, short holds; fair
// waiting (the default), then unfair.
func (b *bench) rowContention(ctx context.Context) error {
	b.res.Contention = &contentionResult{Fair: true}
	if err := b.contention(ctx, b.res.Contention); err != nil {
		return err
	}
	b.res.ContentionUnfair = &contentionResult{}
	return b.contention(ctx, b.res.ContentionUnfair)
}

// contention runs row 6 once, fair or not as res says.
func (b *bench) contention(ctx context.Context, res *contentionResult) error {
	table, err := b.table(ctx, "contention")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	nc, dur := b.sc.ContentionClients, secs(b.sc.ContentionS)
	res.Clients, res.HoldMs, res.LeaseS, res.RefreshMs, res.HeartbeatMs = nc, ms(contHold), contLease.Seconds(), ms(contRefresh), ms(contHeartbeat)
	// lock's default: (lease − lease/10)/2 − heartbeat period, at most 2 s.
	res.RequestTimeoutMs = ms(min(2*time.Second, (contLease-contLease/10)/2-contHeartbeat))

	ctr := newCounter()
	c := b.clients.client(ctr, nil)
	key := "contended-" + b.runID
	lcs := make([]*lock.Client, nc)
	for i := range lcs {
		lc, err := newLocks(c, table, lock.Config{Identity: fmt.Sprintf("client-%02d-%s", i, b.runID), LeaseDuration: contLease, RefreshPeriod: contRefresh, HeartbeatPeriod: contHeartbeat, Unfair: !res.Fair})
		if err != nil {
			return err
		}
		lcs[i] = lc
		defer lc.Close(context.Background())
	}

	b.progress("  %d clients on one key for %v (hold %v, lease %v, refresh %v, fair %t)", nc, dur, contHold, contLease, contRefresh, res.Fair)
	var (
		holders    atomic.Int64
		lastHolder atomic.Int64
		same       atomic.Int64
		overlaps   atomic.Int64
		acqErrs    atomic.Int64
		relErrs    atomic.Int64
		firstErr   atomic.Value
		wg         sync.WaitGroup
		mu         sync.Mutex
		waits      []time.Duration
		openWaits  []time.Duration
		handOvers  []time.Duration
		releasedAt time.Time // the last Release's return, under mu
		perClient  = make([]int64, nc)
		runCtx, cn = context.WithTimeout(ctx, dur)
	)
	defer cn()
	lastHolder.Store(-1)
	s0 := ctr.snapshot()
	start := time.Now()
	for i, lc := range lcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				waitStart := time.Now()
				// Wait as long as the run lasts: the holder changes all the
				// time, and Acquire would otherwise give up one lease after
				// it first found the lock held.
				l, err := lc.Acquire(runCtx, key, lock.WithAdditionalWait(dur))
				if err != nil {
					if runCtx.Err() != nil {
						mu.Lock()
						openWaits = append(openWaits, time.Since(waitStart))
						mu.Unlock()
						return
					}
					acqErrs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					if errors.Is(err, dynalease.ErrInvalid) {
						return
					}
					continue
				}
				wait := time.Since(waitStart)
				if holders.Add(1) > 1 {
					overlaps.Add(1)
				}
				acquiredAt := time.Now()
				prev := lastHolder.Swap(int64(i))
				if prev == int64(i) {
					same.Add(1)
				}
				mu.Lock()
				waits = append(waits, wait)
				if prev != int64(i) && !releasedAt.IsZero() {
					handOvers = append(handOvers, acquiredAt.Sub(releasedAt))
				}
				mu.Unlock()
				perClient[i]++
				time.Sleep(contHold)
				holders.Add(-1)
				if err := l.Release(context.Background()); err != nil {
					relErrs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				mu.Lock()
				releasedAt = time.Now()
				mu.Unlock()
			}
		}()
	}
	// The requests are counted until the run's end: the waiters that then
	// give up and leave the queue together are counted apart.
	<-runCtx.Done()
	elapsed := time.Since(start)
	d := ctr.since(s0)
	s1 := ctr.snapshot()
	wg.Wait()
	res.RequestsAfterRun = ctr.since(s1).attempts

	res.DurationS = round2(elapsed.Seconds())
	res.Acquisitions = int64(len(waits))
	res.AcquisitionsPerS = round2(float64(len(waits)) / elapsed.Seconds())
	res.RequestsPerS = round2(float64(total(d.attempts)) / elapsed.Seconds())
	res.RequestsByOp, res.RequestErrors = d.attempts, d.errs
	if len(waits) > 0 {
		res.RequestsPerAcquisition = round2(float64(total(d.attempts)) / float64(len(waits)))
	}
	if raw := b.rawFor(8); raw != nil {
		res.RatioToRawPerRequest = round3(ratio(res.RequestsPerS, raw.RequestsPerS))
	}
	res.WaitP50Ms, res.WaitP99Ms, res.LongestWaitMs = ms(median(waits)), ms(quantile(waits, 0.99)), ms(maxDur(waits))
	res.LongestOpenWaitMs = ms(maxDur(openWaits))
	res.HandOverP50Ms, res.HandOverP99Ms = ms(median(handOvers)), ms(quantile(handOvers, 0.99))
	res.MinPerClient, res.MaxPerClient = perClient[0], perClient[0]
	for _, n := range perClient {
		if n == 0 {
			res.NeverAcquired++
		}
		res.MinPerClient = min(res.MinPerClient, n)
		res.MaxPerClient = max(res.MaxPerClient, n)
	}
	res.AcquireErrors, res.ReleaseErrors, res.Overlaps = acqErrs.Load(), relErrs.Load(), overlaps.Load()
	res.SameHolderAgain = same.Load()
	if v, ok := firstErr.Load().(string); ok {
		res.FirstError = v
	}
	return nil
}
