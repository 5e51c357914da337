package lock

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// The tests' shorthand for Config: each Option sets one field, so that a
// test names only what it changes (users write a Config, and a
// dynamodbstore.Config for a DynamoDB table).

// testConfig is a Config and, for NewOn, the DynamoDB store's.
type testConfig struct {
	Config
	table dynamodbstore.Config
}

// Option sets a field of Config, or of the store's configuration.
type Option func(*testConfig)

func WithOwnerName(name string) Option         { return func(c *testConfig) { c.Identity = name } }
func WithLeaseDuration(d time.Duration) Option { return func(c *testConfig) { c.LeaseDuration = d } }

// WithHeartbeatPeriod(0) means ManualHeartbeats.
func WithHeartbeatPeriod(d time.Duration) Option {
	return func(c *testConfig) { c.HeartbeatPeriod, c.ManualHeartbeats = d, d == 0 }
}
func WithSafetyMargin(d time.Duration) Option   { return func(c *testConfig) { c.SafetyMargin = d } }
func WithRequestTimeout(d time.Duration) Option { return func(c *testConfig) { c.RequestTimeout = d } }
func WithRefreshPeriod(d time.Duration) Option  { return func(c *testConfig) { c.RefreshPeriod = d } }
func WithPartitionKeyAttribute(name string) Option {
	return func(c *testConfig) { c.table.PartitionKeyAttribute = name }
}
func WithSortKeyAttribute(name string) Option {
	return func(c *testConfig) { c.table.SortKeyAttribute = name }
}
func WithTTL(slack time.Duration) Option  { return func(c *testConfig) { c.TTL = slack } }
func WithTTLAttribute(name string) Option { return func(c *testConfig) { c.table.TTLAttribute = name } }
func WithSingleWriterRegion() Option {
	return func(c *testConfig) { c.table.SingleWriterRegion = true }
}
func WithFencing(table string) Option {
	return func(c *testConfig) { c.Fencing, c.table.FenceTable = true, table }
}
func WithMaxTransactItems(n int) Option  { return func(c *testConfig) { c.table.MaxTransactItems = n } }
func WithClock(clk timing.Clock) Option  { return func(c *testConfig) { c.Clock = clk } }
func WithLogger(l logr.Logger) Option    { return func(c *testConfig) { c.Logger = l } }
func WithMetrics(m metrics.Locks) Option { return func(c *testConfig) { c.Metrics = m } }
func WithHeartbeatConcurrency(n int) Option {
	return func(c *testConfig) { c.concurrency = n }
}
func WithObservationCacheSize(n int) Option {
	return func(c *testConfig) { c.cacheSize = n }
}

// WithUnfair turns fair waiting off (Config.Unfair).
func WithUnfair() Option { return func(c *testConfig) { c.Unfair = true } }

// WithStint sets Config.Stint (negative: a hand-over at every release).
func WithStint(d time.Duration) Option { return func(c *testConfig) { c.Stint = d } }

func configOf(opts []Option) testConfig {
	var c testConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// NewFromStore is New over store with opts; the store's own options
// (WithFencing's table and the like) are the store's business there.
func NewFromStore(store rows.Store, opts ...Option) (*Client, error) {
	cfg := configOf(opts).Config
	cfg.Store = rows.Sealed(store)
	return New(cfg)
}

// NewOn is New on a DynamoDB store of the table through client, with
// opts.
func NewOn(client dynamodbstore.StoreAPI, table string, opts ...Option) (*Client, error) {
	c := configOf(opts)
	c.table.Client, c.table.Table, c.table.Logger = client, table, c.Logger
	store, err := dynamodbstore.New(c.table)
	if err != nil {
		return nil, err
	}
	c.Store = store
	return New(c.Config)
}

// CheckTable makes the DynamoDB store's table check now
// (dynamodbstore.Store.Tables), as the store otherwise does at its first
// request: tests that count requests make it first.
func CheckTable(ctx context.Context, c *Client) error {
	if s, ok := c.store.(interface {
		Tables(context.Context) ([]dynamodbstore.TableInfo, error)
	}); ok {
		_, err := s.Tables(ctx)
		return err
	}
	return nil
}

// GuardItems is Guard of items through the client's DynamoDB store's
// Writes.
func (l *Lock) GuardItems(ctx context.Context, items ...types.TransactWriteItem) error {
	return l.Guard(ctx, l.c.store.(interface {
		Writes(...types.TransactWriteItem) resourcelock.Guarded
	}).Writes(items...))
}

// What tests read of a lock and a client beyond the public API.
func (l *Lock) RVN() string                { return l.rvn() }
func (l *Lock) SortKey() string            { return l.sortKey() }
func (l *Lock) Keys() []string             { return l.keys() }
func (l *Lock) Attributes() map[string]any { return l.attributes() }
func (c *Client) Permits(ctx context.Context, name string, permits int) ([]Info, error) {
	return c.permitRows(ctx, name, permits)
}
