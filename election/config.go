package election

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/candidacy"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// Published defaults, used when the corresponding Config field is zero:
// client-go's leader election defaults (a lock client's lease is the AWS
// Java lock client's 20 s instead, see lock.DefaultLeaseDuration).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Callbacks are the functions an Elector calls as leadership changes.
//
// Order within one Run: OnNewLeader reports holders as they are observed;
// OnStartedLeading starts (in its own goroutine) when this candidate becomes
// leader; when the term ends its context is cancelled, OnStoppedLeading runs,
// and Run returns once OnStartedLeading has returned too. OnStoppedLeading
// runs only after a term whose OnStartedLeading was called: a candidate
// that never led gets no OnStoppedLeading.
//
// OnStartedLeading is never called for a term whose validity has already
// passed (the process paused between the acquiring write and the start of
// the work, or the fencing request was slow): Run then releases the record
// and returns an error matching dynalease.ErrLost. Its context can still
// end at any moment after the call, a pause included, so the work checks it
// before each action it must not take without leadership.
type Callbacks struct {
	// OnStartedLeading runs the leader's work. Required. Its context is
	// cancelled the moment the term ends: at the latest when ValidUntil
	// passes, even if the elector's loop is stuck. Its Deadline is the
	// term's current ValidUntil, moving later with each renewal (contexts
	// derived from it keep the bound current when they were made). It
	// should return soon after cancellation; the term is over when it
	// returns (see Elector.Run).
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading runs once when a term this Run led has ended, after
	// the context given to OnStartedLeading was cancelled and IsLeader
	// became false, possibly before OnStartedLeading has returned. Required.
	OnStoppedLeading func()
	// OnNewLeader, when set, is called with the identity of each new
	// holder as observed, this candidate included. A released or missing
	// record has no holder and is not reported, but the next holder is
	// even if it has the same identity as the previous one. Calls are made
	// in order from one goroutine, never concurrently, and never block the
	// election loop.
	OnNewLeader func(identity string)
}

// Config configures an Elector. New validates it; zero durations take the
// published defaults.
//
// The three durations relate as LeaseDuration > RenewDeadline >
// 1.2 × RetryPeriod. A leader considers itself leader until RenewDeadline
// after it sent its last confirmed renewal; other candidates take over only
// after observing the same record version for LeaseDuration on their own
// clocks. LeaseDuration − RenewDeadline is the time the leader's work has to
// stop, plus room for clock-rate drift between hosts.
type Config struct {
	// Store keeps the leadership record, on the row named Name (and
	// SortKeyValue): the Store of dynamodbstore.New on a DynamoDB lock
	// table, or memorystore.New's in unit tests. Identity is then this
	// candidate's identity. Give Store or Lease, not both.
	Store resourcelock.Store
	// Identity is this candidate's holder identity, with Store. It must
	// be unique among the candidates (a host name plus a UUID, say): two
	// candidates with one identity take the lease from each other.
	Identity string
	// SortKeyValue is the row's sort key value, with Store on a table
	// with a sort key; empty otherwise.
	SortKeyValue string
	// Lease, instead of Store, is the record's storage as a
	// client-go-shaped resourcelock.Interface; its Identity is this
	// candidate's identity and must not be empty. An Interface made by
	// none of dynalease's stores serves an Elector without Fencing.
	Lease resourcelock.Interface
	// LeaseDuration is how long other candidates wait, after they first
	// see a record version, before taking the lease over. It must exceed
	// RenewDeadline by at least 1% of RenewDeadline, and 1 ms: the safety
	// argument needs LeaseDuration > RenewDeadline·(1+ρ)² for a
	// clock-rate drift ρ between hosts (about 1e-4 on real machines), and
	// 1% leaves room for fifty times that. A margin below RetryPeriod is
	// accepted with a warning: it leaves the leader's work very little
	// time to stop.
	LeaseDuration time.Duration
	// RenewDeadline is how long after sending a renewal that was confirmed
	// the leader keeps acting as leader without another confirmed one.
	RenewDeadline time.Duration
	// RetryPeriod is the leader's renewal period and a candidate's polling
	// period; candidates add up to 20% jitter. At least 10 ms: polling a
	// network store faster only turns a failing store into a busy loop
	// of errors.
	RetryPeriod time.Duration
	// RequestTimeout bounds each request to the lock, the SDK's retries
	// included; the Elector applies it (a store's own default timeout
	// applies only to contexts without a deadline). It defaults to
	// RetryPeriod (capped at RenewDeadline − RetryPeriod), may not exceed
	// RenewDeadline − RetryPeriod, and is at least 10 ms.
	RequestTimeout time.Duration
	// Callbacks are called as leadership changes.
	Callbacks Callbacks
	// ReleaseOnCancel makes a leader whose Run context is cancelled, or
	// whose OnStartedLeading returned by itself, mark the record released
	// once OnStartedLeading has returned, so a waiting candidate can take
	// over at its next attempt rather than after a full lease.
	ReleaseOnCancel bool
	// Fencing gives every term a fencing token (Elector.Token,
	// TokenFromContext), strictly greater than the tokens of every earlier
	// term. The store must keep fencing generations, as the DynamoDB store
	// given a FenceTable (dynamodbstore.Config) and the memory store do; New
	// refuses one that does not, and a Lease of another kind than
	// dynalease's stores'. A candidate whose fencing fails at run time releases the
	// record it acquired, backs off a RetryPeriod and tries again; Run
	// returns when the failure is one waiting cannot fix.
	Fencing bool
	// Priority is this candidate's priority, with Store: higher leads. A
	// leader steps down for a live candidate of higher priority once its
	// term has lasted MinTerm, at a safe point, and hands the lease to it
	// (see "Priority and hand-over" in the package doc). Equal priorities
	// never preempt each other. A candidate of priority other than zero
	// stands (see Stand). Zero by default; any int64.
	Priority int64
	// Stand keeps this candidate's entry among the row's candidates while
	// it campaigns, with Store, so that a leader can hand the lease to it
	// (Elector.HandOver) and the dynalease command lists it: each poll
	// writes the entry instead of reading the row, once or twice a
	// RetryPeriod (at most once per half RetryPeriod). A Priority
	// other than zero implies it.
	Stand bool
	// MinTerm is how long a term lasts before a candidate of higher
	// priority can end it: the leader's work gets that long at least.
	// Zero: 3 × RetryPeriod. Elector.HandOver ignores it.
	MinTerm time.Duration
	// Name is the election's name: with Store, the record's row (its
	// partition key value; required); with Lease, a label of log lines
	// (optional).
	Name string
	// Clock times every wait; the real clock when nil.
	Clock clock.WithTickerAndDelayedExecution
	// Logger receives structured logs; silent when unset.
	Logger logr.Logger
	// Metrics receives the Elector's reports (see package metrics and
	// prommetrics); none when nil.
	Metrics metrics.Election
	// TracerProvider receives a span per leadership term
	// (dynalease.election.term, under Run's context; OnStartedLeading's
	// context carries it, and the term's renewals run under it). Nil: the
	// global provider (otel.GetTracerProvider), which records nothing,
	// and costs nothing, until the application sets one.
	TracerProvider trace.TracerProvider
}

// termValidity is how long after the send time of its last confirmed write
// a term stays in force: RenewDeadline.
func (c Config) termValidity() time.Duration { return c.RenewDeadline }

// stands reports whether the candidate keeps an entry among the row's
// candidates while it campaigns.
func (c Config) stands() bool { return c.Store != nil && (c.Stand || c.Priority != 0) }

// liveWindow is how long after a change of its RVN a candidate's entry
// counts as live: a standing candidate writes it at its first poll at
// least half a RetryPeriod after its last write, so at most 1.7 ×
// RetryPeriod apart (polls are at most 1.2 × RetryPeriod apart), and the
// leader reads it at every renewal, one RetryPeriod apart, which leaves
// 0.3 × RetryPeriod for the requests' latency before a live entry is
// missed for a renewal (it counts again at the next).
func (c Config) liveWindow() time.Duration { return 3 * c.RetryPeriod }

// handedLease is the lease a hand-over writes: nobody holds a handed row,
// so a hand-over the named candidate does not confirm is taken over by
// any candidate that has watched it this long, a RetryPeriod or two.
func (c Config) handedLease() time.Duration { return 2 * c.RetryPeriod }

// staleAfter is how long an entry's RVN stays unchanged before a standing
// candidate drops the entry from the row: its candidate is long gone.
func (c Config) staleAfter() time.Duration { return c.LeaseDuration + c.liveWindow() }

// withDefaults returns c with zero durations replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = min(c.RetryPeriod, c.RenewDeadline-c.RetryPeriod)
	}
	if c.MinTerm == 0 {
		c.MinTerm = 3 * c.RetryPeriod
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	if c.Metrics == nil {
		c.Metrics = metrics.Nop{}
	}
	return c
}

func (c Config) validate() error {
	bad := func(field, format string, args ...any) error {
		return &dynalease.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.Lease == nil && c.Store == nil:
		return bad("Store", "is nil, and so is Lease: give one (dynamodbstore.New makes a Store)")
	case c.Lease != nil && c.Store != nil:
		return bad("Lease", "is set, and so is Store: give one")
	case c.Lease != nil && c.Lease.Identity() == "":
		return bad("Lease", "has an empty Identity")
	case c.Store != nil && c.Name == "":
		return bad("Name", "is empty: with Store it names the record's row")
	case c.Store != nil && c.Identity == "":
		return bad("Identity", "is empty")
	case c.Store == nil && (c.Identity != "" || c.SortKeyValue != ""):
		return bad("Identity", "and SortKeyValue are Store's: with Lease the identity is Lease.Identity()")
	case c.LeaseDuration <= 0:
		return bad("LeaseDuration", "is %v, want > 0", c.LeaseDuration)
	case c.RenewDeadline <= 0:
		return bad("RenewDeadline", "is %v, want > 0", c.RenewDeadline)
	case c.RetryPeriod < rvnlease.MinPeriod:
		return bad("RetryPeriod", "is %v, want at least %v", c.RetryPeriod, rvnlease.MinPeriod)
	case c.RenewDeadline <= timing.MaxJittered(c.RetryPeriod):
		return bad("RenewDeadline", "is %v, want > %v (RetryPeriod %v plus the largest jitter)",
			c.RenewDeadline, timing.MaxJittered(c.RetryPeriod), c.RetryPeriod)
	case c.LeaseDuration-c.RenewDeadline < rvnlease.MinMargin(c.RenewDeadline):
		return bad("LeaseDuration", "is %v, want at least RenewDeadline %v + %v (1%% of it, 1 ms at least)",
			c.LeaseDuration, c.RenewDeadline, rvnlease.MinMargin(c.RenewDeadline))
	case c.RequestTimeout < rvnlease.MinPeriod:
		return bad("RequestTimeout", "is %v, want at least %v", c.RequestTimeout, rvnlease.MinPeriod)
	case c.RequestTimeout > c.RenewDeadline-c.RetryPeriod:
		return bad("RequestTimeout", "is %v, want at most RenewDeadline − RetryPeriod = %v",
			c.RequestTimeout, c.RenewDeadline-c.RetryPeriod)
	case c.Store == nil && c.Priority != 0:
		return bad("Priority", "needs Store: a candidate stands as an entry of the store's row")
	case c.Store == nil && c.Stand:
		return bad("Stand", "needs Store: a candidate stands as an entry of the store's row")
	case c.MinTerm < 0:
		return bad("MinTerm", "is %v, want ≥ 0", c.MinTerm)
	case c.Callbacks.OnStartedLeading == nil:
		return bad("Callbacks.OnStartedLeading", "is nil")
	case c.Callbacks.OnStoppedLeading == nil:
		return bad("Callbacks.OnStoppedLeading", "is nil")
	}
	return nil
}

// port returns the lease of the record: a lease of Store's row, or Lease
// as a port of the kernel. It checks what the lease needs: the row's key
// and the identity within their limits, and a lease that can fence when
// Fencing (an error matching dynalease.ErrInvalid naming the field).
func (c Config) port() (keylease.Port, error) {
	var port keylease.Port
	if c.Store != nil {
		l, err := candidacy.Lease(c.Store, resourcelock.Key{Partition: c.Name, Sort: c.SortKeyValue}, c.Identity)
		if err != nil {
			return nil, err
		}
		port = l
	} else {
		port = keylease.PortOf(c.Lease)
	}
	if c.Fencing && !port.CanFence() {
		return nil, &dynalease.InvalidError{Field: "Fencing", Reason: fmt.Sprintf("is set but %s cannot fence (dynamodbstore.Config.FenceTable; a Lease of another kind than dynalease's stores' never can)", port.Describe())}
	}
	return port, nil
}
