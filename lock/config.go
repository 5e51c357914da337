package lock

import (
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// Client defaults: the AWS Java lock client's 20 s lease and 5 s
// heartbeats (an Elector's lease is client-go's 15 s instead, see
// election.DefaultLeaseDuration).
const (
	DefaultLeaseDuration = 20 * time.Second
	// defaultHeartbeatPeriod is the default Config.HeartbeatPeriod.
	defaultHeartbeatPeriod = 5 * time.Second
	// defaultRefreshPeriod is the default Config.RefreshPeriod.
	defaultRefreshPeriod = time.Second
	// defaultHeartbeatConcurrency bounds the heartbeats in flight at once.
	defaultHeartbeatConcurrency = 16
	// defaultObservationCacheSize bounds how many other owners' locks a
	// Client remembers having seen (for TryAcquire of stale locks).
	defaultObservationCacheSize = 10000
	// minTTLSlack is the least Config.TTL New accepts: the TTL must
	// outlast the lease by more than any plausible clock skew between
	// hosts and DynamoDB.
	minTTLSlack = time.Hour
)

// Config configures a Client. New validates it, naming the field of a
// bad value; zero values take the defaults. Store is required.
type Config struct {
	// Store keeps the locks: the Store of dynamodbstore.New on a DynamoDB
	// lock table (its Config names the table, its key and TTL attributes,
	// the fence table and the global-table settings), or memorystore.New()
	// in unit tests. Guarded writes need a store that can make them
	// (dynamodbstore's Writes).
	Store resourcelock.Store

	// Identity is the holder identity written into every lock this client
	// takes, as in resourcelock and election (the AWS Java lock client's
	// items call it ownerName). It must be unique per process: two clients
	// with one identity can release and heartbeat each other's locks. The
	// default is the host name plus a random UUID.
	Identity string
	// LeaseDuration is how long others wait on an unchanged lock of this
	// client before taking it over (DefaultLeaseDuration).
	LeaseDuration time.Duration
	// HeartbeatPeriod is how often held locks are renewed in the background
	// (5 s by default, at least 10 ms), unless ManualHeartbeats.
	HeartbeatPeriod time.Duration
	// ManualHeartbeats turns background heartbeats off: locks then stay
	// valid only as long as the caller heartbeats them (Lock.Heartbeat).
	// HeartbeatPeriod must then be zero.
	ManualHeartbeats bool
	// SafetyMargin is how much earlier than the lease a held lock stops
	// counting as valid: a tenth of the lease by default, and at least 1%
	// of it and 1 ms. A holder counts its lock as held until lease − margin
	// after its last confirmed write was sent; others take it over after a
	// full lease on their own clocks, so the margin is the room for the
	// holder's work to stop and for clock-rate drift between hosts (about
	// 0.01% on real machines).
	SafetyMargin time.Duration
	// RequestTimeout bounds each request, the SDK's retries included. The
	// default is 2 s, lowered when needed to fit the rule heartbeat period
	// + request timeout ≤ (lease − safety margin) / 2.
	RequestTimeout time.Duration
	// RefreshPeriod is how often Acquire polls a held lock (1 s by
	// default, at least 10 ms, plus up to 20% jitter); an Acquire can
	// override it (WithRefreshPeriodFor). Under fair waiting it is the
	// period of the queue's head; waiters further back read less often.
	RefreshPeriod time.Duration
	// Unfair turns fair waiting off: Acquire then polls every refresh
	// period and takes a free lock whoever asks first, and Release
	// marks the row released, as the AWS Java lock client does and at its
	// cost. By default waiting is fair (see the package doc): a waiter
	// joins the row's queue (one write per wait), reads at a pace set by
	// its place, and a release hands the lock to the queue's head once the
	// releaser's stint is over.
	Unfair bool
	// Stint bounds how long the waiters in a key's queue wait while its
	// holder takes the key back after its own Release, ahead of them (see
	// the package doc, Stints): once they have waited Stint since this
	// client first saw them, on its clock, its next Release hands the key
	// to the queue's head. Until then each Release keeps the key for a
	// taking back that costs no hand-over, as a goroutine that unlocks a
	// sync.Mutex and locks it again does. The default is one refresh
	// period; a negative Stint hands the key over at every Release.
	// Unfair clients, sets and permits have none.
	Stint time.Duration

	// TTL, when set, makes every write set the row's TTL attribute to the
	// writer's wall-clock time plus the lease plus TTL, refreshed by
	// heartbeats, so that DynamoDB eventually deletes rows of crashed
	// owners. It must be at least an hour: it must cover any skew
	// between the writer's clock and DynamoDB's, or TTL deletion could
	// remove a live lock. The table's TTL must be enabled on the attribute
	// (dynamodbstore.CreateTable can do it; dynamodbstore.Config names the
	// attribute). Writes without TTL remove it. Do not use it on a table
	// where AWS Java lock clients update rows in place: they do not refresh
	// the TTL attribute, so DynamoDB could delete a lock a Java client
	// holds.
	TTL time.Duration
	// Fencing gives every acquisition a fencing token (Lock.Token),
	// strictly greater than every token issued before for its key, also
	// across deleted rows and rows rewritten by other clients. The store
	// keeps the generations (dynamodbstore.Config.FenceTable, a second
	// table that dynamodbstore.CreateTable makes); New refuses Fencing over
	// a store that keeps none. An acquisition of a row that is new to
	// fencing costs two more requests; every later one none.
	Fencing bool

	// concurrency bounds the heartbeats in flight at once (16 when 0),
	// and cacheSize how many locks of other owners the client remembers
	// having watched (10,000 when 0; the oldest are forgotten first):
	// the library's, set by its tests only.
	concurrency, cacheSize int
	// Clock times every wait; the real clock when nil.
	Clock clock.WithTickerAndDelayedExecution
	// Logger receives structured logs; silent when unset.
	Logger logr.Logger
	// Metrics receives the client's reports (see package metrics and
	// prommetrics); none when nil.
	Metrics metrics.Locks
	// TracerProvider receives the spans of the client's calls (Acquire and
	// its variants, Release, Guard; their attributes are listed in
	// docs/design/tracing.md). Nil: the global provider
	// (otel.GetTracerProvider), which records nothing, and costs nothing,
	// until the application sets one. A provider set globally in an init
	// function that runs before this package's is taken for the default,
	// and records nothing: set it in main, or pass it here.
	TracerProvider trace.TracerProvider
}

// config is a Config with its defaults filled in, as the client uses it.
type config struct {
	identity       string
	lease          time.Duration
	heartbeat      time.Duration // 0: no background heartbeats
	margin         time.Duration
	requestTimeout time.Duration
	refresh        time.Duration
	ttlSlack       time.Duration
	clock          clockutil.Clock
	log            logr.Logger
	metrics        metrics.Locks
	waits          metrics.LockWaits // metrics, when it reports waits
	tracerProvider trace.TracerProvider
	concurrency    int
	cacheSize      int
	stint          time.Duration // 0: none
	fencing        bool
	fair           bool
}

// resolve fills in the defaults of cfg and validates it.
func (cfg Config) resolve() (config, error) {
	c := config{
		identity: cfg.Identity, lease: cfg.LeaseDuration, heartbeat: cfg.HeartbeatPeriod, margin: cfg.SafetyMargin,
		requestTimeout: cfg.RequestTimeout, refresh: cfg.RefreshPeriod, ttlSlack: cfg.TTL, clock: cfg.Clock,
		log: cfg.Logger, metrics: cfg.Metrics, concurrency: cfg.concurrency, cacheSize: cfg.cacheSize,
		fencing: cfg.Fencing, fair: !cfg.Unfair, tracerProvider: cfg.TracerProvider,
	}
	if c.lease == 0 {
		c.lease = DefaultLeaseDuration
	}
	switch {
	case cfg.ManualHeartbeats && cfg.HeartbeatPeriod != 0:
		return c, invalid("HeartbeatPeriod", "is %v, and ManualHeartbeats is set: give one", cfg.HeartbeatPeriod)
	case cfg.ManualHeartbeats:
		c.heartbeat = 0
	case c.heartbeat == 0:
		c.heartbeat = defaultHeartbeatPeriod
	}
	if c.refresh == 0 {
		c.refresh = defaultRefreshPeriod
	}
	switch {
	case !c.fair || cfg.Stint < 0:
	case cfg.Stint == 0:
		c.stint = c.refresh
	default:
		c.stint = cfg.Stint
	}
	if c.concurrency == 0 {
		c.concurrency = defaultHeartbeatConcurrency
	}
	if c.cacheSize == 0 {
		c.cacheSize = defaultObservationCacheSize
	}
	if c.identity == "" {
		host, _ := os.Hostname()
		c.identity = host + "-" + uuid.NewString()
	}
	if c.margin == 0 {
		c.margin = c.lease / 10
	}
	c.defaultOutlets()
	if c.requestTimeout == 0 {
		c.requestTimeout = 2 * time.Second
		if room := (c.lease-c.margin)/2 - c.heartbeat; room > 0 && room < c.requestTimeout {
			c.requestTimeout = room
		}
	}
	return c, c.validate()
}

// defaultOutlets gives c the real clock, a silent log and no metrics
// where cfg gave none.
func (c *config) defaultOutlets() {
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.log.GetSink() == nil {
		c.log = logr.Discard()
	}
	if c.metrics == nil {
		c.metrics = metrics.Nop{}
	}
	c.waits, _ = c.metrics.(metrics.LockWaits)
	if c.waits == nil {
		c.waits = metrics.Nop{}
	}
}

func (c config) validate() error {
	switch {
	case len(c.identity) > record.MaxIdentityBytes:
		return invalid("Identity", "identity is %d bytes, over %d", len(c.identity), record.MaxIdentityBytes)
	case c.lease <= 0:
		return invalid("LeaseDuration", "lease duration %v is not positive", c.lease)
	case c.heartbeat < 0 || (c.heartbeat > 0 && c.heartbeat < rvnlease.MinPeriod):
		return invalid("HeartbeatPeriod", "heartbeat period %v must be at least %v (ManualHeartbeats turns them off)", c.heartbeat, rvnlease.MinPeriod)
	case c.margin < rvnlease.MinMargin(c.lease) || c.margin >= c.lease:
		return invalid("SafetyMargin", "safety margin %v must be at least %v (1%% of the lease, 1 ms at least) and below the lease %v", c.margin, rvnlease.MinMargin(c.lease), c.lease)
	case c.requestTimeout < rvnlease.MinPeriod:
		return invalid("RequestTimeout", "request timeout %v is below %v", c.requestTimeout, rvnlease.MinPeriod)
	case c.requestTimeout > (c.lease-c.margin)/2:
		return invalid("RequestTimeout", "request timeout %v must be at most (lease %v − margin %v) / 2 = %v, less the heartbeat period",
			c.requestTimeout, c.lease, c.margin, (c.lease-c.margin)/2)
	case timing.Add(c.heartbeat, c.requestTimeout) > (c.lease-c.margin)/2:
		return invalid("HeartbeatPeriod", "heartbeat period %v + request timeout %v must be at most (lease %v − margin %v) / 2 = %v",
			c.heartbeat, c.requestTimeout, c.lease, c.margin, (c.lease-c.margin)/2)
	case c.refresh < rvnlease.MinPeriod:
		return invalid("RefreshPeriod", "refresh period %v is below %v", c.refresh, rvnlease.MinPeriod)
	case c.ttlSlack < 0 || (c.ttlSlack > 0 && c.ttlSlack < minTTLSlack):
		return invalid("TTL", "TTL slack %v must be at least %v", c.ttlSlack, minTTLSlack)
	}
	return nil
}

// validity is how long after a confirmed write's send time a lock counts
// as held.
func (c config) validity() time.Duration { return c.lease - c.margin }

// checkData translates the store's data limit into the error of the
// option or argument (field) that carried data.
func checkData(field string, data []byte) error {
	if err := record.CheckData(data); err != nil {
		return refused(field, err)
	}
	return nil
}
