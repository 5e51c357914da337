package dynaotel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// recorder is a TracerProvider whose spans a test reads back.
type recorder struct {
	*sdktrace.TracerProvider
	exp *tracetest.InMemoryExporter
}

func newRecorder(t *testing.T) recorder {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return recorder{TracerProvider: tp, exp: exp}
}

// spans returns the ended spans named name.
func (r recorder) spans(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range r.exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the one ended span named name.
func (r recorder) one(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	s := r.spans(name)
	if len(s) != 1 {
		var names []string
		for _, x := range r.exp.GetSpans() {
			names = append(names, x.Name)
		}
		t.Fatalf("%d spans named %s, want 1; spans: %v", len(s), name, names)
	}
	return s[0]
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func wantAttr(t *testing.T, s tracetest.SpanStub, key string, want any) {
	t.Helper()
	v, ok := attr(s, key)
	if !ok {
		t.Fatalf("span %s has no attribute %s: %v", s.Name, key, s.Attributes)
	}
	if got := v.AsInterface(); got != want {
		t.Fatalf("span %s: %s = %v (%T), want %v (%T)", s.Name, key, got, got, want, want)
	}
}

func intAttr(t *testing.T, s tracetest.SpanStub, key string) int64 {
	t.Helper()
	v, ok := attr(s, key)
	if !ok || v.Type() != attribute.INT64 {
		t.Fatalf("span %s: %s is %v, want an integer", s.Name, key, v)
	}
	return v.AsInt64()
}

// under asserts that s is a child of parent.
func under(t *testing.T, s tracetest.SpanStub, parent trace.Span) {
	t.Helper()
	if s.Parent.SpanID() != parent.SpanContext().SpanID() || s.SpanContext.TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("span %s is not under the caller's span", s.Name)
	}
}

func client(t *testing.T, store resourcelock.Store, id string, tp trace.TracerProvider) *lock.Client {
	t.Helper()
	c, err := lock.New(lock.Config{Store: store, Identity: id, LeaseDuration: 2 * time.Second,
		HeartbeatPeriod: 500 * time.Millisecond, RefreshPeriod: 50 * time.Millisecond, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// An Acquire that waits for the holder's release: its span is under the
// caller's, acquired, with the polls and requests it took. The holder
// releases only once the waiter's first read has begun: its first round
// (the write that found the lock held, then joining the queue) is over by
// then, whatever the machine's speed, so the wait is real and the round
// saw the lock held. (Released at the second request, the join, a slow
// machine let the join's answer show the lock free.)
func TestTheSpanOfAnAcquireThatWaits(t *testing.T) {
	rec := newRecorder(t)
	mem := memorystore.New()
	holder := client(t, mem, "holder", nil)
	held, err := holder.Acquire(context.Background(), "customer-42")
	if err != nil {
		t.Fatal(err)
	}
	waiterStore := faulty.New(rows.MustOpen(mem))
	var reads atomic.Int32
	second := make(chan struct{})
	waiterStore.OnCall(func(op faulty.Op) {
		if op == faulty.OpGet && reads.Add(1) == 1 {
			close(second)
		}
	})
	waiter := client(t, rows.Sealed(waiterStore), "waiter", rec)
	ctx, request := rec.Tracer("test").Start(context.Background(), "POST /orders")
	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx, "customer-42")
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	<-second
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Acquire, Release = %v", err)
	}
	request.End()

	s := rec.one(t, "dynalease.lock.acquire")
	under(t, s, request)
	wantAttr(t, s, "dynalease.outcome", "acquired")
	wantAttr(t, s, "dynalease.lock.key", "customer-42")
	wantAttr(t, s, "dynalease.identity", "waiter")
	if polls := intAttr(t, s, "dynalease.polls"); polls < 2 {
		t.Fatalf("polls = %d, want at least 2 (one saw the lock held)", polls)
	}
	if reqs := intAttr(t, s, "dynalease.requests"); reqs < 2 {
		t.Fatalf("requests = %d, want at least 2", reqs)
	}
	if len(s.Events) == 0 || s.Events[0].Name != "held" {
		t.Fatalf("events %v, want the lock seen held", s.Events)
	}
	r := rec.one(t, "dynalease.lock.release")
	under(t, r, request)
	wantAttr(t, r, "dynalease.outcome", "released")
}

// A TryAcquire that gives up: its span says locked, and is not an error.
func TestTheSpanOfAnAcquireThatGivesUp(t *testing.T) {
	rec := newRecorder(t)
	mem := memorystore.New()
	if _, err := client(t, mem, "holder", nil).Acquire(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := client(t, mem, "waiter", rec).TryAcquire(context.Background(), "k"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("TryAcquire = %v, want ErrLocked", err)
	}
	s := rec.one(t, "dynalease.lock.acquire")
	wantAttr(t, s, "dynalease.outcome", "locked")
	wantAttr(t, s, "dynalease.try", true)
	if s.Status.Code.String() == "Error" {
		t.Fatalf("status %v: a lock found held is an answer, not an error", s.Status)
	}
}

// A lock lost to another holder: the Release that finds it out ends its
// span lost, with the reason as an event.
func TestTheSpanOfALostLock(t *testing.T) {
	rec := newRecorder(t)
	mem := memorystore.New()
	c := client(t, mem, "me", rec)
	l, err := c.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	rows.MustRaw(mem).PutItem(rows.Item{Key: resourcelock.Key{Partition: "k"},
		Record: resourcelock.Record{HolderIdentity: "thief", RVN: "stolen", LeaseDuration: 2 * time.Second}})
	if err := l.Release(context.Background()); !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Release of a stolen lock = %v, want ErrLost", err)
	}
	s := rec.one(t, "dynalease.lock.release")
	wantAttr(t, s, "dynalease.outcome", "lost")
	if len(s.Events) == 0 || s.Events[0].Name != "dynalease.lock.lost" {
		t.Fatalf("events %v, want dynalease.lock.lost", s.Events)
	}
	if s.Status.Code.String() != "Error" {
		t.Fatalf("status %v, want an error", s.Status)
	}
}

// A leadership term: one span under Run's context, from the win to the
// end, whose context the leader's work runs in, with its renewals counted:
// the work returns once a renewal has landed.
func TestTheSpanOfATerm(t *testing.T) {
	rec := newRecorder(t)
	var (
		work trace.SpanContext
		e    *election.Elector
		err  error
	)
	e, err = election.New(election.Config{Store: memorystore.New(), Name: "leader", Identity: "me", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond,
		RetryPeriod: 100 * time.Millisecond, ReleaseOnCancel: true, TracerProvider: rec,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				work = trace.SpanContextFromContext(ctx)
				// Lead until a renewal has landed: the term's validity
				// moves. (No clock figure: a slow machine only waits.)
				first := e.ValidUntil()
				for !e.ValidUntil().After(first) && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond)
				}
			},
			OnStoppedLeading: func() {},
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := rec.Tracer("test").Start(context.Background(), "service")
	if err := e.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	root.End()
	s := rec.one(t, "dynalease.election.term")
	under(t, s, root)
	wantAttr(t, s, "dynalease.outcome", "ended")
	wantAttr(t, s, "dynalease.identity", "me")
	if work.SpanID() != s.SpanContext.SpanID() {
		t.Fatal("OnStartedLeading's context does not carry the term's span")
	}
	if n := intAttr(t, s, "dynalease.renewals"); n < 1 {
		t.Fatalf("renewals = %d, want at least the one the work waited for", n)
	}
}
