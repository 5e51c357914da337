package election

import (
	"context"
	"testing"
	"time"

	"github.com/dynalease/dynalease/resourcelock"
)

// Microbenchmarks of the election's hot paths against the in-memory store
// (make bench runs them and reports ns/op, B/op and allocs/op). The store
// answers at once, so they measure the elector's own work per step.

// benchElector returns an Elector with the given identity on the lease
// "bench" of store.
func benchElector(b *testing.B, store *resourcelock.MemoryStore, identity string) *Elector {
	e, err := New(Config{
		Lock: store.Lock("bench", identity),
		Callbacks: Callbacks{
			OnStartedLeading: func(ctx context.Context) { <-ctx.Done() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// benchLeader returns a Run that holds the lease "bench" of store.
func benchLeader(b *testing.B, store *resourcelock.MemoryStore) *run {
	r := &run{e: benchElector(b, store, "leader")}
	if out, _ := r.create(context.Background()); out != outcomeOurs {
		b.Fatalf("create: outcome %v", out)
	}
	return r
}

// BenchmarkLeaderRenewal is one renewal step of a steady leader: a fresh
// record, the conditional write, the confirmation and the extension of the
// term.
func BenchmarkLeaderRenewal(b *testing.B) {
	r := benchLeader(b, resourcelock.NewMemoryStore())
	e := r.e
	ctx := context.Background()
	t := newTerm(ctx, e.clk, r.mineSent.Add(e.cfg.RenewDeadline), func() {})
	defer t.end(context.Canceled)
	b.ReportAllocs()
	for b.Loop() {
		out, sent := r.renew(ctx)
		if out != outcomeOurs {
			b.Fatalf("renew: outcome %v", out)
		}
		if !t.extend(sent.Add(e.cfg.RenewDeadline)) {
			b.Fatal("term ended")
		}
	}
}

// BenchmarkCandidatePoll is one poll of a candidate while another leads:
// the read, and the observation of the (unchanged) record.
func BenchmarkCandidatePoll(b *testing.B) {
	store := resourcelock.NewMemoryStore()
	benchLeader(b, store)
	r := &run{e: benchElector(b, store, "candidate")}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out, _ := r.read(ctx); out != outcomeOthers {
			b.Fatalf("read: outcome %v", out)
		}
	}
}

// BenchmarkIsLeader is the leadership check callers make before acting.
func BenchmarkIsLeader(b *testing.B) {
	r := benchLeader(b, resourcelock.NewMemoryStore())
	e := r.e
	t := newTerm(context.Background(), e.clk, time.Now().Add(time.Hour), func() {})
	defer t.end(context.Canceled)
	e.mu.Lock()
	e.current = t
	e.mu.Unlock()
	b.ReportAllocs()
	for b.Loop() {
		if !e.IsLeader() {
			b.Fatal("not leader")
		}
	}
}
