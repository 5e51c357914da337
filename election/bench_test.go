package election

import (
	"context"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// Microbenchmarks of the election's hot paths against the in-memory store
// (make bench runs them and reports ns/op, B/op and allocs/op). The store
// answers at once, so they measure the elector's own work per step.

// benchElector returns an Elector with the given identity on the lease
// "bench" of store.
func benchElector(b *testing.B, store *memorystore.Store, identity string) *Elector {
	e, err := New(Config{
		Lease: mustLease(rows.MustOpen(store), "bench", identity),
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

// acquirer returns an acquirer of r's lease, as its campaign's wait makes.
func acquirer(r *run) *rvnlease.Acquirer {
	return r.e.k.Acquirer(rvnlease.Place{Lease: r.e.lease, NewRecord: func(rows.Item) resourcelock.Record { return r.newRecord(false) }})
}

// benchLeader returns a Run that holds the lease "bench" of store.
func benchLeader(b *testing.B, store *memorystore.Store) *run {
	r := newRun(benchElector(b, store, "leader"))
	res, err := acquirer(r).Round(context.Background())
	if err != nil || res.Found != rvnlease.Ours {
		b.Fatalf("create: outcome %v, %v", res.Found, err)
	}
	r.confirm(res.Item, res.Sent)
	return r
}

// BenchmarkLeaderRenewal is one renewal step of a steady leader: a fresh
// record, the conditional write, the confirmation and the extension of the
// term.
func BenchmarkLeaderRenewal(b *testing.B) {
	r := benchLeader(b, memorystore.New())
	e := r.e
	ctx := context.Background()
	t := newTerm(ctx, e.k, &r.hold, e.cfg.Lease.Describe(), r.sent, func() {})
	defer t.end(context.Canceled)
	b.ReportAllocs()
	for b.Loop() {
		w := r.hold.Write(ctx, r.cur, r.newRecord(false))
		if !w.Landed {
			b.Fatalf("renew: %+v", w)
		}
		r.confirm(w.Item, w.Sent)
		if !t.extend(w.Sent) {
			b.Fatal("term ended")
		}
	}
}

// BenchmarkCandidatePoll is one poll of a candidate while another leads:
// the read, and the observation of the (unchanged) record.
func BenchmarkCandidatePoll(b *testing.B) {
	store := memorystore.New()
	benchLeader(b, store)
	acq := acquirer(newRun(benchElector(b, store, "candidate")))
	ctx := context.Background()
	if res, err := acq.Round(ctx); err != nil || res.Found != rvnlease.Others {
		b.Fatalf("first round: outcome %v, %v", res.Found, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := acq.Round(ctx); err != nil || res.Found != rvnlease.Others {
			b.Fatalf("poll: outcome %v, %v", res.Found, err)
		}
	}
}

// BenchmarkIsLeader is the leadership check callers make before acting.
func BenchmarkIsLeader(b *testing.B) {
	r := benchLeader(b, memorystore.New())
	e := r.e
	t := newTerm(context.Background(), e.k, &r.hold, e.cfg.Lease.Describe(), e.clk.Now().Add(time.Hour), func() {})
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
