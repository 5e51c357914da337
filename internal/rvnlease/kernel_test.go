package rvnlease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// kept is a kind's hold as a test keeps it.
type kept struct {
	mu   sync.Mutex
	hold Hold
}

// kernelOn returns a kernel named "me" on fc, logging each request's
// operation to observed (when not nil) as "kernel:OP".
func kernelOn(fc *clocktesting.FakeClock, observed *[]string) *Kernel[*kept] {
	return New(Settings[*kept]{
		Clock: fc, Identity: "me", RequestTimeout: time.Second, Validity: validity,
		Observe: func(op string, _ error, _ time.Duration) {
			if observed != nil {
				*observed = append(*observed, "kernel:"+op)
			}
		},
		HoldOf: func(h *kept) *Hold { return &h.hold },
		Expire: func(*kept) {},
	})
}

// tryOnce makes one Try request of the row at key through a store whose
// every request fails with a transient error, noting its failure as
// failKey.
func tryOnce(t *testing.T, k *Kernel[*kept], failKey string, span *tracing.Acquisition) error {
	t.Helper()
	fs := faulty.New(rows.MustOpen(memorystore.New()))
	for _, op := range []faulty.Op{faulty.OpGet, faulty.OpCreate, faulty.OpUpdate} {
		fs.Inject(op, -1, faulty.Fault{Err: errTimeout})
	}
	kl, err := keylease.New(fs, key, "me")
	if err != nil {
		t.Fatal(err)
	}
	_, err = k.Acquire(context.Background(), Request{
		Places: []Place{{Lease: kl, NewRecord: func(rows.Item) resourcelock.Record {
			return resourcelock.Record{HolderIdentity: "me", RVN: "r1", LeaseDuration: lease}
		}}},
		Period: period, Try: true, FailKey: failKey, Span: span, Loop: "test",
	})
	if !errors.Is(err, errTimeout) {
		t.Fatalf("Acquire through a failing store = %v, want its failure", err)
	}
	return err
}

// A call with a FailKey takes its failure with it when it returns; a call
// without one (an elector's campaign) leaves it for the kind to clear.
func TestKernelAcquireForgetsTheFailureOfACallWithAFailKey(t *testing.T) {
	k := kernelOn(clocktesting.NewFakeClock(t0), nil)
	tryOnce(t, k, "call", nil)
	if err, _ := k.LastFailure(); err != nil {
		t.Fatalf("LastFailure after the call returned = %v, want none", err)
	}
	tryOnce(t, k, "", nil)
	if err, _ := k.LastFailure(); !errors.Is(err, errTimeout) {
		t.Fatalf("LastFailure after a call without FailKey = %v, want its failure kept", err)
	}
	k.Note("", nil)
	if err, _ := k.LastFailure(); err != nil {
		t.Fatalf("LastFailure after Note(nil) = %v, want none", err)
	}
}

// A request's span counts each of its requests, which the kernel's own
// observer hears too, and its polls; a later call's are not its.
func TestKernelCountsARequestsRequestsIntoItsSpan(t *testing.T) {
	var observed []string
	k := kernelOn(clocktesting.NewFakeClock(t0), &observed)
	_, span := tracing.New(recordingProvider{}).StartAcquisition(context.Background(), "test", stringer("k"), "lock", "me", true, 0)
	tryOnce(t, k, "call", span)
	polls, requests := span.Counts()
	if requests == 0 || requests != len(observed) || polls != 1 {
		t.Fatalf("span counted %d polls and %d requests; the kernel observed %v; want one poll and each request", polls, requests, observed)
	}
	tryOnce(t, k, "other", nil)
	if p, r := span.Counts(); p != polls || r != requests {
		t.Fatalf("a later call counted into an earlier call's span: %d polls, %d requests", p, r)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

// recordingProvider makes spans that record and keep nothing.
type recordingProvider struct{ embedded.TracerProvider }

func (recordingProvider) Tracer(string, ...trace.TracerOption) trace.Tracer { return recordingTracer{} }

type recordingTracer struct{ embedded.Tracer }

func (recordingTracer) Start(ctx context.Context, _ string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	return ctx, recordingSpan{}
}

type recordingSpan struct{ noop.Span }

func (recordingSpan) IsRecording() bool { return true }

// A hold the kernel gives is unstarted: it counts as passed, and ending it
// leaves every started hold's validity alone (its timer still ends it).
func TestKernelEndingAnUnstartedHoldTouchesNoOther(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	var expired []*kept
	var mu sync.Mutex
	k := New(Settings[*kept]{Clock: fc, Identity: "me", Validity: validity,
		HoldOf: func(h *kept) *Hold { return &h.hold },
		Expire: func(h *kept) { mu.Lock(); expired = append(expired, h); mu.Unlock() }})
	kl, err := keylease.New(rows.MustOpen(memorystore.New()), key, "me")
	if err != nil {
		t.Fatal(err)
	}
	started, fresh := &kept{hold: k.Hold(kl)}, &kept{hold: k.Hold(kl)}
	started.mu.Lock()
	k.Start(started, fc.Now())
	started.mu.Unlock()
	fresh.mu.Lock()
	if !k.Passed(fresh) {
		t.Fatal("an unstarted hold counts as valid")
	}
	k.End(fresh)
	fresh.mu.Unlock()
	if k.valid.Len() != 1 {
		t.Fatalf("%d validities after ending an unstarted hold, want the started one", k.valid.Len())
	}
	fc.Step(validity)
	deadline := time.Now().Add(30 * time.Second) // the timer's goroutine, not a timing
	for {
		mu.Lock()
		n := len(expired)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the started hold never expired on the kernel's timer")
		}
		time.Sleep(time.Millisecond)
	}
	if expired[0] != started {
		t.Fatal("the kernel expired the unstarted hold")
	}
}

// Renew after Close renews nothing; Renewing runs on its own until its
// stop, which Close does not call.
func TestKernelRenewAfterCloseRenewsNothing(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	k := New(Settings[*kept]{Clock: fc, Identity: "me", Validity: validity, RenewEvery: period,
		HoldOf: func(h *kept) *Hold { return &h.hold }, Expire: func(*kept) {}})
	if !k.Renews() {
		t.Fatal("Renews = false with RenewEvery")
	}
	k.Close()
	k.Renew(&countedHold{clk: fc}, fc.Now())
	k.mu.Lock()
	made := k.renewer != nil
	k.mu.Unlock()
	if made {
		t.Fatal("Renew after Close made a renewer")
	}
}

func TestMinMarginIsOnePercentAndAtLeastAMillisecond(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		10 * time.Second:      100 * time.Millisecond,
		10 * time.Millisecond: time.Millisecond,
	} {
		if got := MinMargin(d); got != want {
			t.Errorf("MinMargin(%v) = %v, want %v", d, got, want)
		}
	}
}
