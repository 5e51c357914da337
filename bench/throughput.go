package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease/lock"
)

// throughput is one throughput measurement: workers running cycles for a
// fixed time.
type throughput struct {
	Mode             string           `json:"mode"`
	Goroutines       int              `json:"goroutines"`
	DurationS        float64          `json:"duration_s"`
	Cycles           int64            `json:"cycles"`
	Errors           int64            `json:"errors"`
	CyclesPerS       float64          `json:"cycles_per_s"`
	RequestsPerS     float64          `json:"requests_per_s"`
	RequestsPerCycle float64          `json:"requests_per_cycle"`
	CycleP50Ms       float64          `json:"cycle_p50_ms"`
	CycleP99Ms       float64          `json:"cycle_p99_ms"`
	RequestsByOp     map[string]int64 `json:"requests_by_operation"`
	ErrorsByClass    map[string]int64 `json:"request_errors_by_class,omitempty"`
	// RatioToRawPerRequest is this row's DynamoDB requests per second
	// divided by the raw limit's (row 1, same number of goroutines).
	RatioToRawPerRequest float64 `json:"ratio_to_raw_per_request,omitempty"`
	// CPUPerCycleUs and CPUPerRequestUs are the bench process's CPU time
	// (user + system: the client's, not the emulator's) over the row's
	// rounds, per cycle and per DynamoDB request; CPURatioToRawPerRequest
	// divides the latter by the raw limit's (row 1, same goroutines).
	CPUPerCycleUs           float64 `json:"cpu_per_cycle_us"`
	CPUPerRequestUs         float64 `json:"cpu_per_request_us"`
	CPURatioToRawPerRequest float64 `json:"cpu_ratio_to_raw_per_request,omitempty"`
	FirstError              string  `json:"first_error,omitempty"`
}

// sample is the raw outcome of cycles run for a while; samples of the same
// kind add up.
type sample struct {
	cycles, errs int64
	firstErr     string
	lat          []time.Duration
	elapsed      time.Duration
	cpu          time.Duration // the process's CPU time (user + system)
	attempts     map[string]int64
	reqErrs      map[string]int64
}

func (s *sample) merge(o sample) {
	s.cycles += o.cycles
	s.errs += o.errs
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
	s.lat = append(s.lat, o.lat...)
	s.elapsed += o.elapsed
	s.cpu += o.cpu
	for _, m := range []struct {
		dst *map[string]int64
		src map[string]int64
	}{{&s.attempts, o.attempts}, {&s.reqErrs, o.reqErrs}} {
		if *m.dst == nil {
			*m.dst = map[string]int64{}
		}
		for k, v := range m.src {
			(*m.dst)[k] += v
		}
	}
}

// throughput summarizes the sample.
func (s sample) throughput(mode string, workers int) throughput {
	sec := s.elapsed.Seconds()
	tp := throughput{
		Mode:          mode,
		Goroutines:    workers,
		DurationS:     round2(sec),
		Cycles:        s.cycles,
		Errors:        s.errs,
		CyclesPerS:    round2(ratio(float64(s.cycles), sec)),
		RequestsPerS:  round2(ratio(float64(total(s.attempts)), sec)),
		CycleP50Ms:    ms(median(s.lat)),
		CycleP99Ms:    ms(quantile(s.lat, 0.99)),
		RequestsByOp:  s.attempts,
		ErrorsByClass: s.reqErrs,
		FirstError:    s.firstErr,
	}
	if s.cycles > 0 {
		tp.RequestsPerCycle = round3(float64(total(s.attempts)) / float64(s.cycles))
		tp.CPUPerCycleUs = round2(float64(s.cpu.Microseconds()) / float64(s.cycles))
	}
	if n := total(s.attempts); n > 0 {
		tp.CPUPerRequestUs = round2(float64(s.cpu.Microseconds()) / float64(n))
	}
	return tp
}

// measure runs cycle in workers goroutines until dur has passed; ctr
// counts the requests the cycles send.
func measure(ctx context.Context, workers int, dur time.Duration, ctr *counter, cycle func(ctx context.Context, worker, i int) error) sample {
	before := ctr.snapshot()
	start, cpu := time.Now(), processCPU()
	deadline := start.Add(dur)
	var (
		wg       sync.WaitGroup
		cycles   atomic.Int64
		errs     atomic.Int64
		firstErr atomic.Value
		lat      = make([][]time.Duration, workers)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			failedInRow := 0
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				t := time.Now()
				if err := cycle(ctx, w, i); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					if failedInRow++; failedInRow >= 50 {
						return // something is broken; do not spin
					}
					continue
				}
				failedInRow = 0
				lat[w] = append(lat[w], time.Since(t))
				cycles.Add(1)
			}
		}()
	}
	wg.Wait()
	d := ctr.since(before)
	s := sample{cycles: cycles.Load(), errs: errs.Load(), elapsed: time.Since(start), cpu: processCPU() - cpu, attempts: d.attempts, reqErrs: d.errs}
	for _, l := range lat {
		s.lat = append(s.lat, l...)
	}
	if v, ok := firstErr.Load().(string); ok {
		s.firstErr = v
	}
	return s
}

// measureRaw runs conditional PutItem + conditional DeleteItem cycles with
// the SDK alone, on distinct keys, with items shaped like lock items.
func (b *bench) measureRaw(ctx context.Context, c *dynamodb.Client, ctr *counter, table string, workers int, dur time.Duration) sample {
	prefix := uuid.NewString()[:8]
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	return measure(ctx, workers, dur, ctr, func(ctx context.Context, w, i int) error {
		key := fmt.Sprintf("raw-%s-%d-%d", prefix, w, i)
		rvn := uuid.NewString()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := c.PutItem(rctx, &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				"key": s(key), "ownerName": s("bench-raw"), "recordVersionNumber": s(rvn), "leaseDuration": s("20000"),
			},
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": "key"},
		})
		if err != nil {
			return fmt.Errorf("PutItem: %w", err)
		}
		_, err = c.DeleteItem(rctx, &dynamodb.DeleteItemInput{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{"key": s(key)},
			ConditionExpression:       aws.String("#r = :r"),
			ExpressionAttributeNames:  map[string]string{"#r": "recordVersionNumber"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": s(rvn)},
		})
		if err != nil {
			return fmt.Errorf("DeleteItem: %w", err)
		}
		return nil
	})
}

// measureLockCycles runs Acquire + Release cycles of one shared lock
// client on distinct keys.
func (b *bench) measureLockCycles(ctx context.Context, c *dynamodb.Client, ctr *counter, table string, workers int, dur time.Duration, del bool) sample {
	lc, err := newLocks(c, table, lock.Config{})
	if err != nil {
		return sample{errs: 1, firstErr: err.Error()}
	}
	defer lc.Close(context.Background())
	prefix := uuid.NewString()[:8]
	var opts []lock.AcquireOption
	if del {
		opts = append(opts, lock.WithDeleteOnRelease())
	}
	return measure(ctx, workers, dur, ctr, func(ctx context.Context, w, i int) error {
		l, err := lc.Acquire(ctx, fmt.Sprintf("lk-%s-%d-%d", prefix, w, i), opts...)
		if err != nil {
			return fmt.Errorf("acquire: %w", err)
		}
		if err := l.Release(ctx); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		return nil
	})
}

// rowRawAndThroughput measures rows 1 and 3 together: for each number of
// goroutines, rounds of raw cycles, lock cycles and lock cycles with
// delete, interleaved, so that the emulator's drift (its JIT keeps
// improving for a while, its garbage collector pauses) affects all three
// alike and their ratios stay fair.
func (b *bench) rowRawAndThroughput(ctx context.Context) error {
	rawTable, err := b.table(ctx, "raw")
	if err != nil {
		return err
	}
	defer b.dropTable(rawTable)
	lockTable, err := b.table(ctx, "throughput")
	if err != nil {
		return err
	}
	defer b.dropTable(lockTable)
	ctr := newCounter()
	c := b.clients.client(ctr, nil)
	rounds := b.sc.ThroughputRounds
	per := secs(b.sc.ThroughputS) / time.Duration(rounds)
	for _, workers := range []int{1, 8} {
		b.progress("  %s: %d rounds of %v each of raw PutItem+DeleteItem, lock Acquire+Release, the same with delete", modeName(workers), rounds, per)
		var raw, kept, del sample
		for r := 0; r < rounds && ctx.Err() == nil; r++ {
			for k := 0; k < 3; k++ {
				switch (r + k) % 3 {
				case 0:
					raw.merge(b.measureRaw(ctx, c, ctr, rawTable, workers, per))
				case 1:
					kept.merge(b.measureLockCycles(ctx, c, ctr, lockTable, workers, per, false))
				case 2:
					del.merge(b.measureLockCycles(ctx, c, ctr, lockTable, workers, per, true))
				}
			}
		}
		rt := raw.throughput(modeName(workers), workers)
		b.res.RawLimit = append(b.res.RawLimit, rt)
		for _, l := range []struct {
			s    sample
			mode string
		}{{kept, ", row kept (default)"}, {del, ", delete on release"}} {
			tp := l.s.throughput(modeName(workers)+l.mode, workers)
			tp.RatioToRawPerRequest = round3(ratio(tp.RequestsPerS, rt.RequestsPerS))
			tp.CPURatioToRawPerRequest = round3(ratio(tp.CPUPerRequestUs, rt.CPUPerRequestUs))
			b.res.LockThroughput = append(b.res.LockThroughput, tp)
		}
	}
	return ctx.Err()
}

func modeName(workers int) string {
	if workers == 1 {
		return "sequential"
	}
	return fmt.Sprintf("%d goroutines", workers)
}

// rawFor returns row 1's measurement with the given number of goroutines.
func (b *bench) rawFor(workers int) *throughput {
	for i := range b.res.RawLimit {
		if b.res.RawLimit[i].Goroutines == workers {
			return &b.res.RawLimit[i]
		}
	}
	return nil
}
