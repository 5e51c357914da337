package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// A Store's defaults, and DynamoDB's limits it keeps to.
const (
	// DefaultPartitionKeyAttribute is the partition key attribute name of
	// a lock table, as in the AWS Java DynamoDB Lock Client.
	DefaultPartitionKeyAttribute = "key"
	// DefaultTTLAttribute is the attribute a lock table's TTL is kept in.
	DefaultTTLAttribute = "ttl"
	// defaultRequestTimeout bounds one DynamoDB operation, the SDK's own
	// retries included, when no request timeout is configured.
	defaultRequestTimeout = 5 * time.Second
	// maxTransactItemsLimit is Amazon DynamoDB's limit on the actions of
	// one TransactWriteItems request. DynamoDB Local 3.x enforces the same.
	maxTransactItemsLimit = 100
	// defaultMaxTransactItems is the most items one TransactWriteItems may
	// hold when Config.MaxTransactItems is zero: DynamoDB's own limit, so a
	// guarded write carries up to 99 of the caller's items besides the
	// check of the lock row.
	defaultMaxTransactItems = maxTransactItemsLimit
)

// StoreAPI is the part of the DynamoDB client that a Store uses.
// *dynamodb.Client satisfies it.
type StoreAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Config configures a Store.
type Config struct {
	// Client sends the requests. Required.
	Client StoreAPI
	// Table is the lock table's name. Required.
	Table string
	// PartitionKeyAttribute is the table's partition key attribute name;
	// DefaultPartitionKeyAttribute when empty.
	PartitionKeyAttribute string
	// SortKeyAttribute is the table's sort key attribute name, empty when the table
	// has none.
	SortKeyAttribute string
	// TTLAttribute is the attribute that holds a row's TTL;
	// DefaultTTLAttribute when empty. Every write sets it or removes it, so
	// a TTL left by an earlier writer never deletes a live lease.
	TTLAttribute string
	// RequestTimeout bounds each operation, the SDK's retries included,
	// whose context has no deadline of its own; 5 s when zero. A caller's deadline is never shortened by it: the election and
	// lock packages set each request's deadline themselves. A Scan's
	// timeout applies per page.
	RequestTimeout time.Duration
	// Clock times the short waits between retries of a guarded write; the
	// real clock when nil.
	Clock clock.WithTickerAndDelayedExecution
	// MaxTransactItems is the most items a TransactWriteItems may hold,
	// from 2 to 100 (Amazon DynamoDB's limit, which DynamoDB Local 3.x
	// enforces too); 100 when zero. A guarded write carries the caller's items plus one
	// check of the lock row. Lower it only for a server with a lower limit.
	MaxTransactItems int
	// OnGuardConflict, when set, is called each time a guarded write is
	// retried after a transaction conflict (for metrics: the lock package
	// reports it as a guarded write outcome "conflict_retried").
	OnGuardConflict func()
	// SingleWriterRegion states that every client of the lock table (and
	// of the fence table) writes through one and the same region. Without
	// it, a Store refuses a global table with multi-Region eventual
	// consistency (MREC), an error matching resourcelock.ErrPermanent: conditional writes
	// sent to two regions of such a table can both succeed, and then two
	// clients hold one lock. With it, the Store uses such a table as a
	// single-region one; the library cannot check the statement, and if
	// it is false, locks on the table are not locks.
	SingleWriterRegion bool
	// SkipTableCheck states that the tables are not to be described
	// before use: the client lacks DescribeTable (a wrapper written
	// against StoreAPI, a test double), or may not call it. Without it,
	// New refuses a client without DescribeTable, since the check that
	// refuses an MREC global table (see SingleWriterRegion) could not run.
	// With it, nothing is checked: an MREC global table is used as if it
	// were a single-region one, and transactions on an MRSC one fail when
	// sent rather than before. New logs that the check is skipped, to
	// Logger.
	SkipTableCheck bool
	// Logger receives the store's few log lines (SkipTableCheck's);
	// silent when unset.
	Logger logr.Logger
	// FenceTable names the table that keeps each key's fencing generation
	// (partition key "key", type S; CreateTable makes one). Empty disables
	// Fence. It must not be the lock table: the AWS Java lock client cannot
	// list a table holding rows that are not locks.
	FenceTable string
}

// Store is a resourcelock.Store on a DynamoDB lock table whose items have
// the layout of the AWS Java DynamoDB Lock Client: what lock.Config.Store
// and election.Config.Store take. Each read of a lease sends one request
// and reads consistently. It is safe for concurrent use.
type Store struct {
	seal       // its rows, as the kernel reads and writes them
	client     StoreAPI
	table      string
	fenceTable string
	keys       keySchema
	timeout    time.Duration
	maxItems   int
	clock      timing.Clock
	onConflict func() // called before each retry of a guarded write after a conflict
	// singleWriter: Config.SingleWriterRegion.
	singleWriter bool
	// The checks of the lock table and of the fence table (see ready).
	lockCheck, fenceCheck tableCheck
}

// seal carries a Store's rows (see rows.Seal).
type seal = rows.Seal

// rowStore is a Store as the kernel reads and writes it: the one
// implementation of rows.Store on DynamoDB. Its reads and writes of one
// row (Get, Create, Update, Remove, Join, Leave, Share, Stand) each send
// exactly one request; Get and Scan read consistently.
type rowStore struct{ *Store }

var (
	_ rows.Store         = (*rowStore)(nil)
	_ resourcelock.Store = (*Store)(nil)
)

// New validates cfg and returns a store. It sends no request.
// An invalid cfg gives a *dynalease.InvalidError naming the field.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, badConfig("Client", "is nil")
	}
	if cfg.Table == "" {
		return nil, badConfig("Table", "is empty")
	}
	if !cfg.SkipTableCheck && !canDescribe(cfg.Client) {
		return nil, badConfig("Client", "has no DescribeTable, so the store cannot check that %s is not a global table with "+
			"multi-Region eventual consistency (MREC), on which a lock is no lock: pass a client with DescribeTable "+
			"(*dynamodb.Client has it; a wrapper passes it on), or set SkipTableCheck to use the table unchecked", cfg.Table)
	}
	if cfg.RequestTimeout < 0 {
		return nil, badConfig("RequestTimeout", "is %v, want ≥ 0", cfg.RequestTimeout)
	}
	keys := keySchema{partitionKey: cfg.PartitionKeyAttribute, sortKey: cfg.SortKeyAttribute, ttl: cfg.TTLAttribute}
	if keys.partitionKey == "" {
		keys.partitionKey = DefaultPartitionKeyAttribute
	}
	if keys.ttl == "" {
		keys.ttl = DefaultTTLAttribute
	}
	if err := keys.check(); err != nil {
		return nil, err
	}
	if cfg.FenceTable != "" && cfg.FenceTable == cfg.Table {
		return nil, badConfig("FenceTable", "must not be the lock table")
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = defaultRequestTimeout
	}
	maxItems := cfg.MaxTransactItems
	if maxItems == 0 {
		maxItems = defaultMaxTransactItems
	}
	switch {
	case maxItems < 2:
		return nil, badConfig("MaxTransactItems", "is %d, which leaves no room for the caller's items", maxItems)
	case maxItems > maxTransactItemsLimit:
		return nil, badConfig("MaxTransactItems", "is %d, above DynamoDB's limit of %d actions per TransactWriteItems", maxItems, maxTransactItemsLimit)
	}
	d := &Store{client: cfg.Client, table: cfg.Table, fenceTable: cfg.FenceTable, keys: keys, timeout: timeout, maxItems: maxItems, clock: timing.OrReal(cfg.Clock), onConflict: cfg.OnGuardConflict, singleWriter: cfg.SingleWriterRegion}
	if cfg.SkipTableCheck {
		d.lockCheck.skip()
		d.fenceCheck.skip()
		cfg.Logger.Info("the lock table is used unchecked (SkipTableCheck): a global table with multi-Region eventual consistency "+
			"(MREC) would not be refused, and two clients writing through two regions could both hold one lock",
			"severity", "warning", "table", cfg.Table, "fenceTable", cfg.FenceTable)
	}
	d.seal = rows.NewSeal(&rowStore{d})
	return d, nil
}

// Describe returns "dynamodb:TABLE".
func (d *Store) Describe() string { return "dynamodb:" + d.table }

func (d *Store) describeKey(k resourcelock.Key) string {
	return d.Describe() + "/" + k.String()
}

// Get reads the row at key with a strongly consistent GetItem.
func (d *rowStore) Get(ctx context.Context, key resourcelock.Key) (rows.Item, error) {
	if err := d.keys.checkKey(key); err != nil {
		return rows.Item{}, err
	}
	if err := d.ready(ctx); err != nil {
		return rows.Item{}, err
	}
	ctx, cancel := d.bound(ctx)
	defer cancel()
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.table),
		Key:            d.keys.itemKey(key.Partition, key.Sort),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return rows.Item{}, d.wrap(key, "get", err)
	}
	if len(out.Item) == 0 {
		return rows.Item{}, fmt.Errorf("%s: %w", d.describeKey(key), resourcelock.ErrNotFound)
	}
	it, err := d.keys.decodeItem(out.Item)
	if err != nil {
		return rows.Item{}, fmt.Errorf("%s: %w", d.describeKey(key), err)
	}
	return it, nil
}

// Create writes rec at key with one UpdateItem conditioned on the row being
// missing (unless opts.OnlyIfExists) or released.
func (d *rowStore) Create(ctx context.Context, key resourcelock.Key, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	rec, opts, err := d.prepare(key, rec, opts)
	if err != nil {
		return rows.Item{}, err
	}
	if err := d.writeReady(ctx, opts); err != nil {
		return rows.Item{}, err
	}
	e := newExpression()
	update := writeItemUpdate(e, d.keys, rec, true, opts)
	// Build only the condition that is sent: each one binds values, and
	// DynamoDB refuses a request with an unused value placeholder.
	var cond string
	if opts.OnlyIfExists {
		cond = d.keys.existingReleasedCondition(e)
	} else {
		cond = d.keys.createCondition(e)
	}
	it, err := d.update(ctx, key, "create", e, update, withBelow(e, withDequeue(e, cond, opts.Dequeue), opts.Below))
	shareStrings(&it, key, rec)
	return it, err
}

// Update writes rec at key with one UpdateItem conditioned on expect.
func (d *rowStore) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	if err := record.CheckPrecondition(expect); err != nil {
		return rows.Item{}, err
	}
	rec, opts, err := d.prepare(key, rec, opts)
	if err != nil {
		return rows.Item{}, err
	}
	if err := d.writeReady(ctx, opts); err != nil {
		return rows.Item{}, err
	}
	e := newExpression()
	update := writeItemUpdate(e, d.keys, rec, expect.HolderIdentity == "", opts)
	cond := withDequeue(e, d.keys.updateCondition(e, expect), opts.Dequeue)
	if expect.HolderIdentity == "" {
		cond = withBelow(e, cond, opts.Below) // a takeover; a holder's own write passed it when it took the row
	}
	it, err := d.update(ctx, key, "update", e, update, cond)
	shareStrings(&it, key, rec)
	return it, err
}

// shareStrings makes it, the row a write of rec at key answered with,
// refer to rec's and key's strings wherever it carries the same values,
// so that a held lock keeps one copy of each (its identity, RVN,
// acquisition ID and key) and the answer's decoded copies are garbage at
// once. A zero it (a failed write) is left as it is.
func shareStrings(it *rows.Item, key resourcelock.Key, rec resourcelock.Record) {
	r := &it.Record
	if it.Key == key {
		it.Key = key
	}
	if r.HolderIdentity == rec.HolderIdentity {
		r.HolderIdentity = rec.HolderIdentity
	}
	if r.RVN == rec.RVN {
		r.RVN = rec.RVN
	}
	switch r.AcquisitionID {
	case rec.AcquisitionID:
		r.AcquisitionID = rec.AcquisitionID
	case rec.RVN: // an acquiring write's acquisition is its RVN
		r.AcquisitionID = rec.RVN
	}
}

// Remove deletes the row at key with one DeleteItem conditioned on expect.
func (d *rowStore) Remove(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition) error {
	if err := d.keys.checkKey(key); err != nil {
		return err
	}
	if err := record.CheckPrecondition(expect); err != nil {
		return err
	}
	if err := d.ready(ctx); err != nil {
		return err
	}
	ctx, cancel := d.bound(ctx)
	defer cancel()
	e := newExpression()
	cond := d.keys.removeCondition(e, expect)
	_, err := d.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(d.table),
		Key:                       d.keys.itemKey(key.Partition, key.Sort),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		// As for UpdateItem: a failed condition answers with the row.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		return d.wrap(key, "remove", err)
	}
	return nil
}

// Scan reads every row with consistent, paginated Scan requests, or one
// partition's rows with Query requests.
func (d *rowStore) Scan(ctx context.Context, partition string, fn func(rows.Item, error) error) error {
	if partition != "" {
		if err := record.CheckKey(resourcelock.Key{Partition: partition}); err != nil {
			return err
		}
	}
	if err := d.ready(ctx); err != nil {
		return err
	}
	var start map[string]types.AttributeValue
	for {
		items, next, err := d.page(ctx, partition, start)
		if err != nil {
			return err
		}
		for _, raw := range items {
			it, err := d.keys.decodeItem(raw)
			if err != nil {
				err = fmt.Errorf("%s: %w", d.describeKey(it.Key), err)
			}
			if ferr := fn(it, err); ferr != nil {
				return ferr
			}
		}
		if len(next) == 0 {
			return nil
		}
		start = next
	}
}

func (d *Store) page(ctx context.Context, partition string, start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue, error) {
	ctx, cancel := d.bound(ctx)
	defer cancel()
	if partition == "" {
		out, err := d.client.Scan(ctx, &dynamodb.ScanInput{
			TableName:         aws.String(d.table),
			ConsistentRead:    aws.Bool(true),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, nil, wrapTableError(d.table, d.Describe()+": scan", err)
		}
		return out.Items, out.LastEvaluatedKey, nil
	}
	if err := record.CheckKey(resourcelock.Key{Partition: partition}); err != nil {
		return nil, nil, err
	}
	e := newExpression()
	cond := e.name(d.keys.partitionKey) + " = " + e.value(s(partition))
	out, err := d.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(d.table),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ExclusiveStartKey:         start,
	})
	if err != nil {
		return nil, nil, wrapTableError(d.table, d.Describe()+": query "+partition, err)
	}
	return out.Items, out.LastEvaluatedKey, nil
}

// writeReady checks the tables (see ready) and refuses a TTL on an MRSC
// global table, which does not support TTL.
func (d *Store) writeReady(ctx context.Context, opts rows.WriteOptions) error {
	if err := d.ready(ctx); err != nil {
		return err
	}
	if d.mrsc() && !opts.Expires.IsZero() {
		return fmt.Errorf("%s: %w: MRSC global tables do not support TTL", d.Describe(), dynalease.ErrInvalid)
	}
	return nil
}

// prepare validates a write before any request and returns its record
// and options as written (checked and normalized before the request).
func (d *Store) prepare(key resourcelock.Key, rec resourcelock.Record, opts rows.WriteOptions) (resourcelock.Record, rows.WriteOptions, error) {
	if err := d.keys.checkKey(key); err != nil {
		return resourcelock.Record{}, opts, err
	}
	rec, opts, err := record.Prepare(key, rec, opts)
	if err != nil {
		return rec, opts, err
	}
	return rec, opts, d.keys.checkOptions(opts)
}

func (d *Store) update(ctx context.Context, key resourcelock.Key, op string, e *expression, update, condition string) (rows.Item, error) {
	if err := d.ready(ctx); err != nil {
		return rows.Item{}, err
	}
	ctx, cancel := d.bound(ctx)
	defer cancel()
	out, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.table),
		Key:                       d.keys.itemKey(key.Partition, key.Sort),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(condition),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ReturnValues:              types.ReturnValueAllNew,
		// A failed condition answers with the row it found, which settles
		// the write without a second request (see rows.Conflict).
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		return rows.Item{}, d.wrap(key, op, err)
	}
	it, err := d.keys.decodeItem(out.Attributes)
	if err != nil {
		// The write landed; only its echo is unreadable.
		return rows.Item{}, fmt.Errorf("%s: %s landed but its result is unreadable: %w", d.describeKey(key), op, err)
	}
	return it, nil
}

// bound gives ctx the store's default request timeout when it has no
// deadline of its own. A caller that bounds its requests (the election and
// lock packages do, from settings validated against the lease) owns the
// timeout; the store never shortens or stacks another on it.
func (d *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		// ctx as it is: a derived context would cost an allocation and a
		// registration with ctx's own per request, for nothing.
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d.timeout)
}

// wrap classifies a DynamoDB error: a failed condition becomes a
// rows.Conflict (carrying the row the server returned, when it did and the
// row decodes), a missing table resourcelock.ErrPermanent; anything else keeps its
// cause.
func (d *Store) wrap(key resourcelock.Key, op string, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		var current *rows.Item
		if len(ccf.Item) > 0 {
			if it, derr := d.keys.decodeItem(ccf.Item); derr == nil {
				current = &it
			}
		}
		return rows.Conflict(fmt.Sprintf("%s: %s", d.describeKey(key), op), current, err)
	}
	return wrapTableError(d.table, fmt.Sprintf("%s: %s", d.describeKey(key), op), err)
}
