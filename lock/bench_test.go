package lock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// Microbenchmarks of the lock client's hot paths against the in-memory
// store (make bench runs them and reports ns/op, B/op and allocs/op). The
// store answers at once, so they measure the client's own work.

// benchClient returns a client over a fresh MemoryStore, without background
// heartbeats so that none runs during a measurement.
func benchClient(b *testing.B) *Client {
	c, err := NewFromStore(rows.MustOpen(memorystore.New()), WithOwnerName("bench-owner"), WithHeartbeatPeriod(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// BenchmarkLockHeartbeat is one heartbeat of a held lock: a fresh RVN, the
// conditional write, the confirmation and the re-armed expiry timer.
func BenchmarkLockHeartbeat(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "customer-42")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Heartbeat(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockAcquireRelease is an uncontended Acquire and Release of a
// new key.
func BenchmarkLockAcquireRelease(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		l, err := c.Acquire(ctx, "key-"+fmt.Sprint(i))
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockAcquireReleaseParallel is BenchmarkLockAcquireRelease from
// GOMAXPROCS goroutines sharing one client, on distinct keys.
func BenchmarkLockAcquireReleaseParallel(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := c.Acquire(ctx, "key-"+fmt.Sprint(n.Add(1)))
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkLockIsHeld is the check a holder makes before acting.
func BenchmarkLockIsHeld(b *testing.B) {
	c := benchClient(b)
	l, err := c.Acquire(context.Background(), "customer-42")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !l.IsHeld() {
			b.Fatal("not held")
		}
	}
}

// BenchmarkLeaseObservation is a waiter's bookkeeping per poll: observe
// the record read (the holder renewed it: a new RVN) and ask whether it
// may be taken over.
func BenchmarkLeaseObservation(b *testing.B) {
	recs := [2]rows.Item{
		{Record: resourcelock.Record{HolderIdentity: "other", RVN: "0c6f4f1e-7a7b-4d0e-9a55-3b7e2f1d9c8a", LeaseDuration: 20 * time.Second}},
		{Record: resourcelock.Record{HolderIdentity: "other", RVN: "1b2c3d4e-5f60-4172-8394-a5b6c7d8e9f0", LeaseDuration: 20 * time.Second}},
	}
	var o rvnlease.Observation
	now := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		o.Observe(recs[i%2], false, now)
		if o.Expired(now) {
			b.Fatal("expired")
		}
	}
}

// BenchmarkObservationCache is the client's bounded cache of watched
// locks: one put and one get, with evictions once full.
func BenchmarkObservationCache(b *testing.B) {
	o := rvnlease.NewWatches(defaultObservationCacheSize)
	keys := make([]resourcelock.Key, 2*defaultObservationCacheSize)
	for i := range keys {
		keys[i] = resourcelock.Key{Partition: fmt.Sprintf("key-%d", i)}
	}
	obs := rvnlease.Observation{Known: true, RVN: "rvn", Lease: 20 * time.Second}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := keys[i%len(keys)]
		i++
		o.Put(k, obs, rvnlease.Attempts{})
		if _, _, ok := o.Get(k); !ok {
			b.Fatal("missing")
		}
	}
}
