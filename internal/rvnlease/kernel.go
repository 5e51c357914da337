package rvnlease

import (
	"context"
	"go.opentelemetry.io/otel/trace"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Kernel is the protocol as one holder identity runs it (a lock client, an
// elector), built once: its settings, what it watched of others' leases
// and its writes still in doubt (kept for the next wait of the same keys),
// the failures it keeps retrying, the validities of its holds (on one
// timer), and the background renewals of its holds. A kind of lock
// acquires through Acquire and holds through the Holds the kernel gives;
// it builds none of these parts itself.
//
// H is the kind's hold (a pointer to its lock, or to an elector's term):
// the kernel ends H when its validity passes (Settings.Expire), and H
// keeps its Hold, whose send time and validity the kernel writes.
type Kernel[H comparable] struct {
	cfg     Config
	watches *Watches
	failing *Failing
	valid   *Validities[H]

	renewEvery   time.Duration // zero: no background renewals
	renewWorkers int
	renewLoop    string

	tracer tracing.Tracer

	mu      sync.Mutex
	renewer *Renewer // the shared renewer, made by the first Renew
	closed  bool
}

// Settings configure a Kernel.
type Settings[H comparable] struct {
	// Clock times every request, wait and validity; the real clock when
	// nil.
	Clock timing.Clock
	// Identity is the holder identity written into the kind's records.
	Identity string
	// RequestTimeout bounds each request, the SDK's retries included.
	RequestTimeout time.Duration
	// Validity is how long after the send of its last confirmed write a
	// hold counts the lease as its own.
	Validity time.Duration
	// Log receives the kernel's lines; Observe, when set, is told of every
	// request (see Config.Observe).
	Log     logr.Logger
	Observe func(op string, err error, d time.Duration)
	// Watches is how many keys of others' leases the kernel remembers
	// watching (at least 1).
	Watches int
	// Failing, when set, is told of every change of the failure retried
	// longest (nil once none fails); it must not block.
	Failing func(err error, since time.Time)
	// RenewEvery, when positive, renews the holds given to Renew (or
	// Renewing) in the background, one period after the previous renewal
	// began, at most RenewWorkers at once (Renew's), on a loop named
	// RenewLoop for a watching clock.
	RenewEvery   time.Duration
	RenewWorkers int
	RenewLoop    string
	// HoldOf returns H's Hold; Expire ends H once its validity has passed
	// (called without any lock of the kernel's held).
	HoldOf func(H) *Hold
	Expire func(H)
	// TracerProvider receives the kind's spans (Tracer); nil means the
	// global provider.
	TracerProvider trace.TracerProvider
}

// New returns the kernel of s.
func New[H comparable](s Settings[H]) *Kernel[H] {
	s.Clock = timing.OrReal(s.Clock)
	k := &Kernel[H]{
		cfg: Config{Clock: s.Clock, Identity: s.Identity, RequestTimeout: s.RequestTimeout, Validity: s.Validity,
			Log: s.Log, Observe: s.Observe, Epoch: s.Clock.Now(), Waits: &Waits{}},
		watches: NewWatches(max(s.Watches, 1)),
		failing: NewFailing(s.Clock, s.Log, orIgnore(s.Failing)),
		tracer:  tracing.New(s.TracerProvider),
	}
	k.valid = NewValidities(s.Clock, k.cfg.Epoch, s.Validity,
		func(h H) *time.Duration { return &s.HoldOf(h).sent },
		func(h H) *Validity { return &s.HoldOf(h).valid },
		s.Expire)
	if s.RenewEvery > 0 {
		k.renewEvery, k.renewWorkers, k.renewLoop = s.RenewEvery, max(s.RenewWorkers, 1), s.RenewLoop
	}
	return k
}

// Tracer returns the tracer of the kind's spans.
func (k *Kernel[H]) Tracer() tracing.Tracer { return k.tracer }

// Clock returns the kernel's clock.
func (k *Kernel[H]) Clock() timing.Clock { return k.cfg.Clock }

// Hold returns the hold of a lease won through port: its writes over the
// row (Renew, Release, Guard's loss), settled as every write of the kernel
// is. The hold comes back unstarted (passed; End is a no-op on it): Start
// starts its validity.
func (k *Kernel[H]) Hold(port keylease.Port) Hold {
	return Hold{w: writer{cfg: &k.cfg, port: port}, valid: unstarted()}
}

// Acquirer returns the acquirer of one place with the kernel's settings:
// its rounds outside the wait loop, for benchmarks and tests of a round.
func (k *Kernel[H]) Acquirer(p Place) *Acquirer {
	return NewAcquirer(&k.cfg, p.Lease, p.NewRecord)
}

// Acquire runs the one wait loop (see Wait) over r, with the kernel's
// watches and failures. The call's failure (r.FailKey) is forgotten when
// it returns: nothing retries for it any more. A request without FailKey
// keeps its failure after it returns (an elector's, which outlives one
// campaign, until the elector notes the next outcome).
func (k *Kernel[H]) Acquire(ctx context.Context, r Request) (Won, error) {
	cfg := &k.cfg
	if r.Span != nil {
		c := k.cfg
		own, span := c.Observe, r.Span
		c.Observe = func(op string, err error, d time.Duration) {
			span.Requested()
			if own != nil {
				own(op, err, d)
			}
		}
		cfg = &c
	}
	w := Wait{Engine: cfg, Places: r.Places, Read: r.Read, Period: r.Period, Rhythm: r.Rhythm, Budget: r.Budget,
		OnlyIfExists: r.OnlyIfExists, Try: r.Try, Fence: r.Fence,
		Watches: k.watches, Failing: k.failing, FailKey: r.FailKey, OnPoll: r.OnPoll, Span: r.Span, Loop: r.Loop}
	if r.Unremembered {
		w.Watches = nil
	}
	if r.FailKey != "" {
		defer k.failing.Forget(r.FailKey)
	}
	return w.Run(ctx)
}

// Start starts h's validity, from the send time sent of the write that
// won it; a validity already passed expires h at once (from the timer's
// goroutine).
func (k *Kernel[H]) Start(h H, sent time.Time) { k.valid.Start(h, sent) }

// Extend moves h's validity to count from sent, when later; false once
// it has passed or ended (a validity never resumes).
func (k *Kernel[H]) Extend(h H, sent time.Time) bool { return k.valid.Extend(h, sent) }

// End ends h's validity now; it is never expired.
func (k *Kernel[H]) End(h H) { k.valid.End(h) }

// Passed reports whether h's validity has passed or ended. Call it under
// the kind's lock of h.
func (k *Kernel[H]) Passed(h H) bool { return k.valid.Passed(h) }

// Until returns when h's validity ends (its last confirmed send plus the
// validity), whether or not it has passed. Call it under the kind's lock
// of h.
func (k *Kernel[H]) Until(h H) time.Time { return k.valid.Until(h) }

// Renew renews r on the kernel's shared renewer from first on, every
// Settings.RenewEvery, until r reports it has ended or Close. It renews
// nothing without RenewEvery, or once Close has begun.
func (k *Kernel[H]) Renew(r Renewable, first time.Time) {
	if k.renewEvery <= 0 {
		return
	}
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	if k.renewer == nil {
		k.renewer = NewRenewer(k.cfg.Clock, k.renewEvery, k.renewWorkers, k.renewLoop)
	}
	s := k.renewer
	k.mu.Unlock()
	s.Add(r, first) // after a Close meanwhile, Add schedules nothing
}

// RenewAfter is Renew from a renewal period after sent, jittered (see
// timing.Spread) so that the renewals of holds won together spread out.
func (k *Kernel[H]) RenewAfter(r Renewable, sent time.Time) {
	k.Renew(r, sent.Add(timing.Spread(k.cfg.Clock, k.renewEvery)))
}

// WithRequestTimeout returns ctx bounded by the kernel's request timeout,
// for a kind's own request (a read of many rows).
func (k *Kernel[H]) WithRequestTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return timing.WithTimeout(ctx, k.cfg.Clock, k.cfg.RequestTimeout)
}

// Renewing renews r alone, on a renewer of its own, every RenewEvery from
// first on, until stop: stop returns once no renewal of r is under way and
// none will begin. It is for a kind that holds one lease at a time and
// touches its row again after it stops renewing (an elector's term, which
// releases its record then). Nothing is renewed without RenewEvery. Close
// does not stop it: stop does.
func (k *Kernel[H]) Renewing(r Renewable, first time.Time) (stop func()) {
	if k.renewEvery <= 0 {
		return func() {}
	}
	s := NewRenewer(k.cfg.Clock, k.renewEvery, 1, k.renewLoop)
	s.Add(r, first)
	return s.Close
}

// Renews reports whether the kernel renews holds in the background
// (Settings.RenewEvery).
func (k *Kernel[H]) Renews() bool { return k.renewEvery > 0 }

// Close stops the shared renewer (Renew's) and waits for its renewals
// under way; a Renew after it renews nothing. Renewing's renewers are
// stopped by their own stop.
func (k *Kernel[H]) Close() {
	k.mu.Lock()
	k.closed = true
	s := k.renewer
	k.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// Note records the outcome of a request or round for key (see Failing): a
// nil err clears key's failure.
func (k *Kernel[H]) Note(key string, err error) { k.failing.Note(key, err) }

// Forget drops key's failure: nothing retries for it any more.
func (k *Kernel[H]) Forget(key string) { k.failing.Forget(key) }

// LastFailure returns the failure retried longest and since when; nil and
// the zero time when none fails.
func (k *Kernel[H]) LastFailure() (error, time.Time) { return k.failing.Last() }

// KeepForStint remembers it, this identity's own release of key within
// its stint (begun at stintStart), as the watch of key: the next Acquire
// of key by this identity takes the row back at once, by a write
// conditioned on its RVN (see Acquirer.Offered).
func (k *Kernel[H]) KeepForStint(key resourcelock.Key, it rows.Item, stintStart time.Time) {
	prev, _, _ := k.watches.Get(key)
	obs := Observation{Pace: prev.Pace}
	obs.Observe(it, false, k.cfg.Clock.Now())
	obs.StintStart = stintStart
	k.watches.Put(key, obs, Attempts{})
}

// HandedOver remembers it, this identity's release of key that handed it
// to the queue's head, as the watch of key, its timer started late by
// delay (waiting longer is always safe), so that the waiters already
// queued, who see it sooner, take over a hand-over nobody confirms before
// this identity does.
func (k *Kernel[H]) HandedOver(key resourcelock.Key, it rows.Item, delay time.Duration) {
	prev, _, _ := k.watches.Get(key)
	obs := Observation{Pace: prev.Pace}
	obs.Observe(it, false, k.cfg.Clock.Now().Add(delay))
	k.watches.Put(key, obs, Attempts{})
}

// Request is one acquiring call (see Wait for each field): its places,
// polls, budget and rules; the kernel adds its settings, watches and
// failures.
type Request struct {
	Places       []Place
	Read         func(ctx context.Context) (map[resourcelock.Key]rows.Item, error)
	Period       time.Duration
	Rhythm       time.Duration
	Budget       Budget
	OnlyIfExists bool
	Try          bool
	Fence        bool
	FailKey      string
	OnPoll       func(Poll)
	Loop         string
	// Unremembered: the wait neither resumes a watch of its places nor
	// leaves one (a shared hold's place is its own, one hold's: an
	// earlier hold's writes in doubt are not this one's).
	Unremembered bool
	// Span, when not nil, counts this call's requests and polls (the
	// span of a lock's acquisition).
	Span *tracing.Acquisition
}

// Watches returns what the kernel remembers watching, for tests and
// diagnostics.
func (k *Kernel[H]) Watches() *Watches { return k.watches }

// orIgnore returns report, or a report that ignores every change when nil.
func orIgnore(report func(error, time.Time)) func(error, time.Time) {
	if report == nil {
		return func(error, time.Time) {}
	}
	return report
}
