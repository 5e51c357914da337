package lock

import (
	"time"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/dynamodbstore"
)

// The tests' shorthand for Config: each Option sets one field, so that a
// test names only what it changes (users write a Config).

// Option sets a field of Config.
type Option func(*Config)

func WithOwnerName(name string) Option         { return func(c *Config) { c.Owner = name } }
func WithLeaseDuration(d time.Duration) Option { return func(c *Config) { c.LeaseDuration = d } }

// WithHeartbeatPeriod(0) means ManualHeartbeats.
func WithHeartbeatPeriod(d time.Duration) Option {
	return func(c *Config) { c.HeartbeatPeriod, c.ManualHeartbeats = d, d == 0 }
}
func WithSafetyMargin(d time.Duration) Option   { return func(c *Config) { c.SafetyMargin = d } }
func WithRequestTimeout(d time.Duration) Option { return func(c *Config) { c.RequestTimeout = d } }
func WithRefreshPeriod(d time.Duration) Option  { return func(c *Config) { c.RefreshPeriod = d } }
func WithPartitionKeyAttribute(name string) Option {
	return func(c *Config) { c.PartitionKeyAttribute = name }
}
func WithSortKeyAttribute(name string) Option { return func(c *Config) { c.SortKeyAttribute = name } }
func WithTTL(slack time.Duration) Option      { return func(c *Config) { c.TTL = slack } }
func WithTTLAttribute(name string) Option     { return func(c *Config) { c.TTLAttribute = name } }
func WithSingleWriterRegion() Option          { return func(c *Config) { c.SingleWriterRegion = true } }
func WithFencing(table string) Option {
	return func(c *Config) { c.Fencing, c.FenceTable = true, table }
}
func WithMaxTransactItems(n int) Option     { return func(c *Config) { c.MaxTransactItems = n } }
func WithClock(clk clockutil.Clock) Option  { return func(c *Config) { c.Clock = clk } }
func WithLogger(l logr.Logger) Option       { return func(c *Config) { c.Logger = l } }
func WithMetrics(m metrics.Locks) Option    { return func(c *Config) { c.Metrics = m } }
func WithHeartbeatConcurrency(n int) Option { return func(c *Config) { c.HeartbeatConcurrency = n } }
func WithObservationCacheSize(n int) Option { return func(c *Config) { c.ObservationCacheSize = n } }
func configOf(cfg Config, opts []Option) Config {
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// NewFromStore is New over store with opts; WithFencing's table is the
// store's business there.
func NewFromStore(store resourcelock.Store, opts ...Option) (*Client, error) {
	cfg := configOf(Config{Store: store}, opts)
	cfg.FenceTable = ""
	return New(cfg)
}

// NewOn is New on the DynamoDB table with opts.
func NewOn(client dynamodbstore.StoreAPI, table string, opts ...Option) (*Client, error) {
	return New(configOf(Config{Client: client, Table: table}, opts))
}

// WithUnfair turns fair waiting off (Config.Unfair).
func WithUnfair() Option { return func(c *Config) { c.Unfair = true } }
