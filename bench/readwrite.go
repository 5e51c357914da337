package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynalease/dynalease/lock"
)

// Row 11's settings: clients on one key, each taking it shared (a read)
// rwReadShare of the time and exclusively (a write) otherwise, holding it
// rwHold each time and asking again at once; the same workload with every
// operation exclusive is the baseline.
const (
	rwClients   = 20
	rwReadShare = 0.9
	rwHold      = 10 * time.Millisecond
	rwMaxS      = 30.0 // each phase runs the contention duration, at most this
)

// readWriteResult is row 11's result.
type readWriteResult struct {
	Clients   int     `json:"clients"`
	ReadShare float64 `json:"read_share"`
	HoldMs    float64 `json:"hold_ms"`
	DurationS float64 `json:"duration_s_each"`
	LeaseS    float64 `json:"lease_duration_s"`

	Shared    readWritePhase `json:"shared"`    // reads shared, writes exclusive
	Exclusive readWritePhase `json:"exclusive"` // every operation exclusive
	// Speedup is the shared phase's operations per second over the
	// exclusive phase's (goal ≥ 5).
	Speedup float64 `json:"speedup"`
	// WriterWaitBoundMs is the goal for the shared phase's writer wait
	// p99: twice the longest read hold plus one reader's lease.
	WriterWaitBoundMs float64 `json:"writer_wait_p99_bound_ms"`
}

// readWritePhase is one phase of row 11.
type readWritePhase struct {
	Reads             int64            `json:"reads"`
	Writes            int64            `json:"writes"`
	OpsPerS           float64          `json:"operations_per_s"`
	ReadsPerS         float64          `json:"reads_per_s"`
	RequestsPerAcq    float64          `json:"requests_per_acquisition"`
	RequestsByOp      map[string]int64 `json:"requests_by_operation"`
	ReadWaitP50Ms     float64          `json:"read_wait_p50_ms"`
	ReadWaitP99Ms     float64          `json:"read_wait_p99_ms"`
	WriteWaitP50Ms    float64          `json:"write_wait_p50_ms"`
	WriteWaitP99Ms    float64          `json:"write_wait_p99_ms"`
	MostReaders       int64            `json:"most_readers_at_once"`
	Overlaps          int64            `json:"writer_overlaps"`
	Errors            int64            `json:"errors"`
	FirstError        string           `json:"first_error,omitempty"`
	writeWaits, reads []time.Duration  // gathered, not reported
}

// rowReadWrite is row 11: rwClients clients on one key, reads shared and
// writes exclusive, then the same with every operation exclusive. A writer
// never holds with another holder (counted in process, between an
// acquisition's return and its release's send).
func (b *bench) rowReadWrite(ctx context.Context) error {
	dur := secs(min(b.sc.ContentionS, rwMaxS))
	res := &readWriteResult{Clients: rwClients, ReadShare: rwReadShare, HoldMs: ms(rwHold), DurationS: dur.Seconds(), LeaseS: contLease.Seconds()}
	b.res.ReadWrite = res
	for _, shared := range []bool{true, false} {
		ph := &res.Exclusive
		if shared {
			ph = &res.Shared
		}
		if err := b.readWritePhase(ctx, shared, dur, ph); err != nil {
			return err
		}
	}
	if res.Exclusive.OpsPerS > 0 {
		res.Speedup = round2(res.Shared.OpsPerS / res.Exclusive.OpsPerS)
	}
	res.WriterWaitBoundMs = 2 * (ms(rwHold) + ms(contLease))
	if n := res.Shared.Overlaps + res.Exclusive.Overlaps; n > 0 {
		return fmt.Errorf("%d holds overlapped a writer's", n)
	}
	return nil
}

func (b *bench) readWritePhase(ctx context.Context, shared bool, dur time.Duration, ph *readWritePhase) error {
	table, err := b.table(ctx, "readwrite")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	ctr := newCounter()
	c := b.clients.client(ctr, nil)
	b.progress("  %d clients, %.0f%% reads (shared: %v), %v holds, for %v", rwClients, rwReadShare*100, shared, rwHold, dur)
	rctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var readers, writers, reads, writes, errs atomic.Int64
	var firstErr atomic.Value
	var mu sync.Mutex
	s0 := ctr.snapshot()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range rwClients {
		lc, err := newLocks(c, table, lock.Config{Identity: fmt.Sprintf("rw-%02d-%s", i, b.runID),
			LeaseDuration: contLease, RefreshPeriod: contRefresh, HeartbeatPeriod: contHeartbeat})
		if err != nil {
			return err
		}
		defer lc.Close(context.WithoutCancel(ctx))
		rng := rand.New(rand.NewPCG(uint64(i), 11))
		wg.Go(func() {
			var readWaits, writeWaits []time.Duration
			defer func() {
				mu.Lock()
				ph.reads = append(ph.reads, readWaits...)
				ph.writeWaits = append(ph.writeWaits, writeWaits...)
				mu.Unlock()
			}()
			for rctx.Err() == nil {
				read := rng.Float64() < rwReadShare
				asked := time.Now()
				var l *lock.Lock
				var err error
				if read && shared {
					l, err = lc.AcquireShared(rctx, "k", lock.WithAdditionalWait(time.Minute))
				} else {
					l, err = lc.Acquire(rctx, "k", lock.WithAdditionalWait(time.Minute))
				}
				if err != nil {
					if rctx.Err() == nil && !errors.Is(err, lock.ErrLocked) {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					continue
				}
				waited := time.Since(asked)
				if read && shared {
					n := readers.Add(1)
					for m := ph.MostReaders; n > m; m = atomic.LoadInt64(&ph.MostReaders) {
						if atomic.CompareAndSwapInt64(&ph.MostReaders, m, n) {
							break
						}
					}
					if writers.Load() > 0 {
						atomic.AddInt64(&ph.Overlaps, 1)
					}
				} else if writers.Add(1) > 1 || readers.Load() > 0 {
					atomic.AddInt64(&ph.Overlaps, 1)
				}
				time.Sleep(rwHold)
				if read && shared {
					readers.Add(-1)
				} else {
					writers.Add(-1)
				}
				if read {
					reads.Add(1)
					readWaits = append(readWaits, waited)
				} else {
					writes.Add(1)
					writeWaits = append(writeWaits, waited)
				}
				if err := l.Release(context.WithoutCancel(rctx)); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	d := ctr.since(s0)
	ph.Reads, ph.Writes, ph.Errors = reads.Load(), writes.Load(), errs.Load()
	if v := firstErr.Load(); v != nil {
		ph.FirstError = v.(string)
	}
	ops := ph.Reads + ph.Writes
	ph.OpsPerS = round2(float64(ops) / elapsed.Seconds())
	ph.ReadsPerS = round2(float64(ph.Reads) / elapsed.Seconds())
	ph.RequestsByOp = d.attempts
	if ops > 0 {
		ph.RequestsPerAcq = round2(float64(total(d.attempts)) / float64(ops))
	}
	ph.ReadWaitP50Ms, ph.ReadWaitP99Ms = ms(quantile(ph.reads, 0.5)), ms(quantile(ph.reads, 0.99))
	ph.WriteWaitP50Ms, ph.WriteWaitP99Ms = ms(quantile(ph.writeWaits, 0.5)), ms(quantile(ph.writeWaits, 0.99))
	return nil
}

func printReadWrite(w io.Writer, r *results) {
	s := r.ReadWrite
	if s == nil {
		return
	}
	section(w, fmt.Sprintf("11. Read-write: %d clients on one key, %.0f%% reads, %.0f ms holds, %.0f s each way (lease %.0f s)", s.Clients, s.ReadShare*100, s.HoldMs, s.DurationS, s.LeaseS))
	var k kv
	for _, p := range []struct {
		name string
		ph   *readWritePhase
	}{{"reads shared", &s.Shared}, {"all exclusive", &s.Exclusive}} {
		k.add(p.name, "%.1f operations/s (%d reads, %d writes; %.1f reads/s); %.1f requests per acquisition %v", p.ph.OpsPerS, p.ph.Reads, p.ph.Writes, p.ph.ReadsPerS, p.ph.RequestsPerAcq, p.ph.RequestsByOp)
		k.add("  waits", "reads p50 %.1f ms, p99 %.1f ms; writes p50 %.1f ms, p99 %.1f ms; most readers at once %d", p.ph.ReadWaitP50Ms, p.ph.ReadWaitP99Ms, p.ph.WriteWaitP50Ms, p.ph.WriteWaitP99Ms, p.ph.MostReaders)
		if p.ph.Errors > 0 {
			k.add("  errors", "%d, first: %s", p.ph.Errors, p.ph.FirstError)
		}
	}
	k.add("speedup", "%.2f× the exclusive lock's operations per second (goal ≥ 5)", s.Speedup)
	k.add("writers' wait p99", "%.1f ms (goal ≤ %.0f ms: twice the read hold plus a reader's lease)", s.Shared.WriteWaitP99Ms, s.WriterWaitBoundMs)
	k.print(w)
}
