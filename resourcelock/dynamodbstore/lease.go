package dynamodbstore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// LeaseConfig configures one lease on a DynamoDB table.
type LeaseConfig struct {
	// Client sends the requests. Required.
	Client ItemAPI
	// Table is the lock table's name. Required.
	Table string
	// Name is the lock's name: the partition key value of its item.
	// Required; at most resourcelock.MaxNameBytes bytes.
	Name string
	// Identity is the holder identity written into records. Required; it
	// must be unique among the processes that compete for the lock.
	Identity string
	// PartitionKeyAttribute is the table's partition key attribute name;
	// DefaultPartitionKeyAttribute when empty.
	PartitionKeyAttribute string
	// SortKeyAttribute is the table's sort key attribute name, empty when the table
	// has none. SortKeyValue is then the lock's sort key value.
	SortKeyAttribute string
	SortKeyValue     string
	// TTLAttribute is the attribute that holds a row's TTL;
	// DefaultTTLAttribute when empty. Every write removes it, so a TTL
	// left by another client never deletes this live lease.
	TTLAttribute string
	// RequestTimeout bounds each operation, the SDK's retries included,
	// whose context has no deadline of its own; DefaultRequestTimeout when
	// zero. An Elector gives every request a deadline of its own
	// (election.Config.RequestTimeout), so this applies only to other
	// callers.
	RequestTimeout time.Duration
	// FenceTable names the table of fencing generations; see
	// Config.FenceTable. Empty disables Fence.
	FenceTable string
	// MaxTransactItems bounds guarded writes; see Config.
	MaxTransactItems int
	// OnGuardConflict: see Config.
	OnGuardConflict func()
	// SingleWriterRegion: see Config.
	SingleWriterRegion bool
	// SkipTableCheck: see Config. Without it, a Client without
	// DescribeTable is refused.
	SkipTableCheck bool
	// Logger: see Config.
	Logger logr.Logger
}

// Lease is the lease on one item of a DynamoDB lock table: a
// resourcelock.Lease, with every capability of one, whose holder can also
// commit its own writes in one transaction with a check that the lease is
// still held (Writes, for election.Elector.Guard).
type Lease struct {
	*resourcelock.Lease
	store *Store
}

// Writes returns the guarded write of items on this lease's row (see
// Store.Writes): a holding that names no keys is checked on the lease's
// own row.
func (l *Lease) Writes(items ...types.TransactWriteItem) resourcelock.Guarded {
	return func(ctx context.Context, h resourcelock.Holding) error {
		if len(h.Keys) == 0 {
			h.Keys = []resourcelock.Key{l.Key()}
		}
		return l.store.Guard(ctx, h, items...)
	}
}

// NewLease returns the lease on the item cfg names, for election.New and
// other users of resourcelock.Interface. It validates cfg and sends no
// request.
func NewLease(cfg LeaseConfig) (*Lease, error) {
	if cfg.Client == nil {
		return nil, badConfig("Client", "is nil")
	}
	store, err := New(Config{
		Client:                itemOnly{cfg.Client},
		Table:                 cfg.Table,
		PartitionKeyAttribute: cfg.PartitionKeyAttribute,
		SortKeyAttribute:      cfg.SortKeyAttribute,
		TTLAttribute:          cfg.TTLAttribute,
		RequestTimeout:        cfg.RequestTimeout,
		FenceTable:            cfg.FenceTable,
		MaxTransactItems:      cfg.MaxTransactItems,
		OnGuardConflict:       cfg.OnGuardConflict,
		SingleWriterRegion:    cfg.SingleWriterRegion,
		SkipTableCheck:        cfg.SkipTableCheck,
		Logger:                cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	if cfg.SortKeyAttribute == "" && cfg.SortKeyValue != "" {
		return nil, badConfig("SortKeyValue", "is set but SortKeyAttribute is not")
	}
	key := resourcelock.Key{Partition: cfg.Name, Sort: cfg.SortKeyValue}
	if err := store.keys.checkKey(key); err != nil {
		return nil, err
	}
	lease, err := resourcelock.NewLease(store, key, cfg.Identity)
	if err != nil {
		return nil, err
	}
	return &Lease{Lease: lease, store: store}, nil
}

// CanFence reports whether Fence can work: whether a FenceTable is
// configured.
func (d *Store) CanFence() bool { return d.fenceTable != "" }

// badConfig returns the error of a configuration field.
func badConfig(field, format string, args ...any) error {
	return &dynalease.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// itemOnly adapts an ItemAPI to StoreAPI for a store that only ever gets
// and updates one item (and runs guarded writes when the client can).
type itemOnly struct{ ItemAPI }

func (i itemOnly) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	t, ok := i.ItemAPI.(TransactAPI)
	if !ok {
		return nil, fmt.Errorf("%w: the DynamoDB client has no TransactWriteItems and TransactGetItems", dynalease.ErrInvalid)
	}
	return t.TransactWriteItems(ctx, in, optFns...)
}

func (i itemOnly) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	t, ok := i.ItemAPI.(TransactAPI)
	if !ok {
		return nil, fmt.Errorf("%w: the DynamoDB client has no TransactWriteItems and TransactGetItems", dynalease.ErrInvalid)
	}
	return t.TransactGetItems(ctx, in, optFns...)
}

// DescribeTable passes through to the client, so that the table check
// (see Store.Tables) covers a lease too; NewLease refuses a client without
// it (see canDescribe) unless the check is skipped.
func (i itemOnly) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	d, ok := i.ItemAPI.(DescribeAPI)
	if !ok {
		return nil, fmt.Errorf("%w: the DynamoDB client has no DescribeTable", dynalease.ErrInvalid)
	}
	return d.DescribeTable(ctx, in, optFns...)
}

func (itemOnly) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, fmt.Errorf("%w: this client only gets and updates items", dynalease.ErrInvalid)
}

func (itemOnly) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return nil, fmt.Errorf("%w: this client only gets and updates items", dynalease.ErrInvalid)
}

func (itemOnly) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, fmt.Errorf("%w: this client only gets and updates items", dynalease.ErrInvalid)
}
