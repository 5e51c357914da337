package lock

import (
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/dynamodbstore"
)

// Client defaults.
const (
	DefaultLeaseDuration   = 20 * time.Second
	DefaultHeartbeatPeriod = 5 * time.Second
	DefaultRefreshPeriod   = time.Second
	// DefaultHeartbeatConcurrency bounds the heartbeats in flight at once.
	DefaultHeartbeatConcurrency = 16
	// DefaultObservationCacheSize bounds how many other owners' locks a
	// Client remembers having seen (for TryAcquire of stale locks).
	DefaultObservationCacheSize = 10000
	// MinTTLSlack is the least slack WithTTL accepts: the TTL must
	// outlast the lease by more than any plausible clock skew between
	// hosts and DynamoDB.
	MinTTLSlack = time.Hour
)

// Option configures a Client.
type Option func(*config)

type config struct {
	owner          string
	lease          time.Duration
	heartbeat      time.Duration
	heartbeatSet   bool
	margin         time.Duration
	marginSet      bool
	requestTimeout time.Duration
	refresh        time.Duration
	partitionKey   string
	sortKey        string
	ttlAttribute   string
	ttlSlack       time.Duration
	clock          clockutil.Clock
	log            logr.Logger
	metrics        metrics.Locks
	concurrency    int
	cacheSize      int
	fencing        bool
	fenceTable     string
	maxTransact    int
}

// WithOwnerName sets the owner name written into every lock this client
// takes. It must be unique per process: two clients with one owner name
// can release and heartbeat each other's locks. The default is the host
// name plus a random UUID.
func WithOwnerName(name string) Option { return func(c *config) { c.owner = name } }

// WithLeaseDuration sets how long others wait on an unchanged lock of this
// client before taking it over (default 20 s).
func WithLeaseDuration(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithHeartbeatPeriod sets how often held locks are renewed in the
// background (default 5 s). Zero turns background heartbeats off: locks
// then stay valid only as long as the caller heartbeats them by hand.
func WithHeartbeatPeriod(d time.Duration) Option {
	return func(c *config) { c.heartbeat, c.heartbeatSet = d, true }
}

// WithSafetyMargin sets how much earlier than the lease a held lock stops
// counting as valid (default a tenth of the lease; at least
// MinSafetyMargin of it). It leaves room for the holder's work to stop and
// for clock-rate drift.
func WithSafetyMargin(d time.Duration) Option {
	return func(c *config) { c.margin, c.marginSet = d, true }
}

// WithRequestTimeout bounds each request, the SDK's retries included.
// The default is 2 s, lowered when needed to fit the rule heartbeat period
// + request timeout ≤ (lease − safety margin) / 2.
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.requestTimeout = d } }

// WithRefreshPeriod sets how often Acquire polls a held lock (default 1 s,
// plus up to 20% jitter); an Acquire can override it.
func WithRefreshPeriod(d time.Duration) Option { return func(c *config) { c.refresh = d } }

// WithPartitionKeyAttribute names the table's partition key attribute (default
// "key", as in the AWS Java lock client).
func WithPartitionKeyAttribute(name string) Option { return func(c *config) { c.partitionKey = name } }

// WithSortKeyAttribute names the table's sort key attribute, for tables
// that have one; every Acquire then needs WithSortKeyValue.
func WithSortKeyAttribute(name string) Option { return func(c *config) { c.sortKey = name } }

// WithTTL makes every write set the row's TTL attribute to the writer's
// wall-clock time plus the lease plus slack, refreshed by heartbeats, so
// that DynamoDB eventually deletes rows of crashed owners. slack must be at
// least MinTTLSlack: it must cover any skew between the writer's clock and
// DynamoDB's, or TTL deletion could remove a live lock. The table's TTL must
// be enabled on that attribute (dynamodbstore.CreateTable can do it).
//
// Do not use TTL on a table where AWS Java lock clients update rows in
// place: they do not refresh the TTL attribute, so DynamoDB could delete a
// lock a Java client still holds.
func WithTTL(slack time.Duration) Option { return func(c *config) { c.ttlSlack = slack } }

// WithTTLAttribute names the TTL attribute (default "ttl"). Writes without
// WithTTL remove it.
func WithTTLAttribute(name string) Option { return func(c *config) { c.ttlAttribute = name } }

// WithFencing gives every acquisition a fencing token (Lock.Token),
// strictly greater than every token issued before for its key, also across
// deleted rows and rows rewritten by other clients. Generations are kept in
// fenceTable, a second table with partition key "key" of type S
// (dynamodbstore.CreateTable makes one). An acquisition of a row that is new
// to fencing costs two more requests; every later one none.
func WithFencing(fenceTable string) Option {
	return func(c *config) { c.fencing, c.fenceTable = true, fenceTable }
}

// WithMaxTransactItems sets the most items a TransactWriteItems may hold,
// from 2 to dynamodbstore.MaxTransactItemsLimit (100, DynamoDB's limit),
// which bounds Lock.Guard to one less. The default is DynamoDB's limit;
// lower it only for a server that allows fewer.
func WithMaxTransactItems(n int) Option { return func(c *config) { c.maxTransact = n } }

// WithClock sets the clock every wait uses (default the real clock).
func WithClock(clk clockutil.Clock) Option { return func(c *config) { c.clock = clk } }

// WithLogger sets the structured logger (default silent).
func WithLogger(l logr.Logger) Option { return func(c *config) { c.log = l } }

// WithMetrics sets where the client reports its locks, heartbeats and
// requests (see package metrics and prommetrics); none by default.
func WithMetrics(m metrics.Locks) Option { return func(c *config) { c.metrics = m } }

// WithHeartbeatConcurrency bounds how many heartbeats run at once
// (default 16).
func WithHeartbeatConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithObservationCacheSize bounds how many locks of other owners the
// client remembers having watched (default 10,000); the oldest are
// forgotten first.
func WithObservationCacheSize(n int) Option { return func(c *config) { c.cacheSize = n } }

func newConfig(opts []Option) (config, error) {
	c := config{
		lease:        DefaultLeaseDuration,
		heartbeat:    DefaultHeartbeatPeriod,
		refresh:      DefaultRefreshPeriod,
		partitionKey: dynamodbstore.DefaultPartitionKey,
		ttlAttribute: dynamodbstore.DefaultTTLAttribute,
		concurrency:  DefaultHeartbeatConcurrency,
		cacheSize:    DefaultObservationCacheSize,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.owner == "" {
		host, _ := os.Hostname()
		c.owner = host + "-" + uuid.NewString()
	}
	if !c.marginSet {
		c.margin = c.lease / 10
	}
	c.clock = clockutil.OrReal(c.clock)
	if c.log.GetSink() == nil {
		c.log = logr.Discard()
	}
	if c.metrics == nil {
		c.metrics = metrics.Nop{}
	}
	if c.requestTimeout == 0 {
		c.requestTimeout = 2 * time.Second
		if room := (c.lease-c.margin)/2 - c.heartbeat; room > 0 && room < c.requestTimeout {
			c.requestTimeout = room
		}
	}
	return c, c.validate()
}

func (c config) validate() error {
	switch {
	case len(c.owner) > resourcelock.MaxIdentityBytes:
		return invalid("WithOwnerName", "owner name is %d bytes, over %d", len(c.owner), resourcelock.MaxIdentityBytes)
	case c.lease <= 0:
		return invalid("WithLeaseDuration", "lease duration %v is not positive", c.lease)
	case c.heartbeat < 0 || (c.heartbeat > 0 && c.heartbeat < MinHeartbeatPeriod):
		return invalid("WithHeartbeatPeriod", "heartbeat period %v must be 0 (no background heartbeats) or at least %v", c.heartbeat, MinHeartbeatPeriod)
	case c.margin < MinSafetyMargin(c.lease) || c.margin >= c.lease:
		return invalid("WithSafetyMargin", "safety margin %v must be at least %v (MinSafetyMargin) and below the lease %v", c.margin, MinSafetyMargin(c.lease), c.lease)
	case c.requestTimeout < MinRequestTimeout:
		return invalid("WithRequestTimeout", "request timeout %v is below %v", c.requestTimeout, MinRequestTimeout)
	case c.requestTimeout > (c.lease-c.margin)/2:
		return invalid("WithRequestTimeout", "request timeout %v must be at most (lease %v − margin %v) / 2 = %v, less the heartbeat period",
			c.requestTimeout, c.lease, c.margin, (c.lease-c.margin)/2)
	case clockutil.Add(c.heartbeat, c.requestTimeout) > (c.lease-c.margin)/2:
		return invalid("WithHeartbeatPeriod", "heartbeat period %v + request timeout %v must be at most (lease %v − margin %v) / 2 = %v",
			c.heartbeat, c.requestTimeout, c.lease, c.margin, (c.lease-c.margin)/2)
	case c.refresh < MinRefreshPeriod:
		return invalid("WithRefreshPeriod", "refresh period %v is below %v", c.refresh, MinRefreshPeriod)
	case c.ttlSlack < 0 || (c.ttlSlack > 0 && c.ttlSlack < MinTTLSlack):
		return invalid("WithTTL", "TTL slack %v must be at least %v", c.ttlSlack, MinTTLSlack)
	case c.concurrency <= 0:
		return invalid("WithHeartbeatConcurrency", "heartbeat concurrency %d is not positive", c.concurrency)
	case c.cacheSize <= 0:
		return invalid("WithObservationCacheSize", "observation cache size %d is not positive", c.cacheSize)
	case c.maxTransact < 0 || c.maxTransact == 1:
		return invalid("WithMaxTransactItems", "max transaction items %d leaves no room for a guarded write", c.maxTransact)
	case c.maxTransact > dynamodbstore.MaxTransactItemsLimit:
		return invalid("WithMaxTransactItems", "max transaction items %d is above DynamoDB's limit of %d", c.maxTransact, dynamodbstore.MaxTransactItemsLimit)
	}
	return nil
}

// Floors for a network store: New and Acquire refuse shorter periods and
// timeouts. A request to DynamoDB takes milliseconds; polling, beating or
// giving up faster only turns a failing store into a busy loop of errors.
const (
	MinRefreshPeriod   = 10 * time.Millisecond
	MinHeartbeatPeriod = 10 * time.Millisecond
	MinRequestTimeout  = 10 * time.Millisecond
)

// MinSafetyMargin returns the smallest safety margin New accepts for a
// lease: 1% of it, and at least one millisecond. A holder counts its lock
// as held until lease − margin after its last confirmed write was sent;
// others take it over after a full lease on their own clocks, so the
// margin is the room for clock-rate drift between hosts (about 0.01% on
// real machines) and for the holder's work to stop.
func MinSafetyMargin(lease time.Duration) time.Duration {
	return rvnlease.MinMargin(lease)
}

// validity is how long after a confirmed write's send time a lock counts
// as held.
func (c config) validity() time.Duration { return c.lease - c.margin }

// checkData translates resourcelock's data limit into an option error.
func checkData(data []byte) error {
	if err := resourcelock.CheckData(data); err != nil {
		return &OptionError{Option: "WithData", Err: err} // the limit is resourcelock's
	}
	return nil
}
