package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
)

// setsResult is row 9's result: sets of keys acquired and released, one
// after another, by one client.
type setsResult struct {
	Sizes []setSize `json:"sizes"`
}

type setSize struct {
	Keys           int              `json:"keys"`
	Cycles         int              `json:"cycles"`
	CyclesPerS     float64          `json:"cycles_per_s"`
	AcquireP50Ms   float64          `json:"acquire_p50_ms"`
	AcquireP99Ms   float64          `json:"acquire_p99_ms"`
	RequestsPerAcq float64          `json:"requests_per_acquire"`
	RequestsByOp   map[string]int64 `json:"requests_by_operation"`
	Errors         int              `json:"errors"`
}

// rowSets is row 9: a client acquires and releases a set of 1, 10 and 50
// free keys, for a few seconds each: the latency and requests of a set's
// acquisition (one transaction over all its keys).
func (b *bench) rowSets(ctx context.Context) error {
	table, err := b.table(ctx, "sets")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	res := &setsResult{}
	b.res.Sets = res
	dur := secs(b.sc.ThroughputS)
	for _, n := range []int{1, 10, 50} {
		ctr := newCounter()
		store, err := dynamodbstore.New(dynamodbstore.Config{Client: b.clients.client(ctr, nil), Table: table})
		if err != nil {
			return err
		}
		// The table check now, so that the row counts its operations'
		// requests only.
		if _, err := store.Tables(ctx); err != nil {
			return err
		}
		lc, err := lock.New(lock.Config{Store: store, Identity: fmt.Sprintf("sets-%d-%s", n, b.runID)})
		if err != nil {
			return err
		}
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("set-%d-%02d-%s", n, i, b.runID)
		}
		b.progress("  a set of %d keys, acquired and released for %v", n, dur)
		var lat []time.Duration
		row := setSize{Keys: n}
		s0 := ctr.snapshot()
		start := time.Now()
		for time.Since(start) < dur && ctx.Err() == nil {
			t0 := time.Now()
			l, err := lc.AcquireSet(ctx, keys)
			if err != nil {
				row.Errors++
				continue
			}
			lat = append(lat, time.Since(t0))
			if err := l.Release(ctx); err != nil {
				row.Errors++
			}
		}
		elapsed := time.Since(start)
		acq := ctr.since(s0)
		_ = lc.Close(ctx)
		row.Cycles = len(lat)
		row.CyclesPerS = round2(float64(len(lat)) / elapsed.Seconds())
		row.AcquireP50Ms, row.AcquireP99Ms = ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99))
		row.RequestsByOp = acq.attempts
		if len(lat) > 0 {
			row.RequestsPerAcq = round2(float64(total(acq.attempts)) / float64(len(lat)) / 2) // acquire + release per cycle
		}
		res.Sizes = append(res.Sizes, row)
	}
	return nil
}

func printSets(w io.Writer, r *results) {
	s := r.Sets
	if s == nil {
		return
	}
	section(w, "9. Sets of keys: one client acquires and releases a set of free keys, again and again")
	t := newTable("keys", "cycles/s", "acquire p50", "acquire p99", "requests per acquire or release", "errors").alignRight(0, 1, 2, 3, 4, 5)
	for _, z := range s.Sizes {
		t.add(fmt.Sprint(z.Keys), f1(z.CyclesPerS), msStr(z.AcquireP50Ms), msStr(z.AcquireP99Ms), fmt.Sprintf("%.2f %v", z.RequestsPerAcq, z.RequestsByOp), fmt.Sprint(z.Errors))
	}
	t.print(w)
}
