package resourcelock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DefaultRequestTimeout bounds one DynamoDB operation, the SDK's own retries
// included, when DynamoDBConfig.RequestTimeout is zero.
const DefaultRequestTimeout = 5 * time.Second

// ItemAPI is the part of the DynamoDB client that a lock uses.
// *dynamodb.Client satisfies it.
type ItemAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// DynamoDBConfig configures a DynamoDB lock.
type DynamoDBConfig struct {
	// Client sends the requests. Required.
	Client ItemAPI
	// Table is the lock table's name. Required.
	Table string
	// Name is the lock's name: the partition key value of its item.
	// Required; at most MaxNameBytes bytes.
	Name string
	// Identity is the holder identity written into records. Required; it
	// must be unique among the processes that compete for the lock.
	Identity string
	// PartitionKey is the table's partition key attribute name;
	// DefaultPartitionKey when empty.
	PartitionKey string
	// SortKey is the table's sort key attribute name, empty when the table
	// has none. SortKeyValue is then the lock's sort key value.
	SortKey      string
	SortKeyValue string
	// RequestTimeout bounds each operation, the SDK's retries included;
	// DefaultRequestTimeout when zero. The caller's context may bound it
	// further.
	RequestTimeout time.Duration
}

// DynamoDB is an Interface on one item of a DynamoDB lock table. Its item
// layout is the AWS Java DynamoDB Lock Client's (see the package
// documentation). Every method sends exactly one request.
type DynamoDB struct {
	client   ItemAPI
	table    string
	keys     keySchema
	key      map[string]types.AttributeValue
	name     string
	identity string
	timeout  time.Duration
}

var _ Interface = (*DynamoDB)(nil)

// NewDynamoDB returns a lock on the item cfg names. It validates cfg and
// sends no request.
func NewDynamoDB(cfg DynamoDBConfig) (*DynamoDB, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: Client is nil", ErrInvalidArgument)
	}
	if cfg.Table == "" {
		return nil, fmt.Errorf("%w: Table is empty", ErrInvalidArgument)
	}
	if err := checkName(cfg.Name); err != nil {
		return nil, err
	}
	if err := checkIdentity(cfg.Identity); err != nil {
		return nil, err
	}
	if cfg.RequestTimeout < 0 {
		return nil, fmt.Errorf("%w: RequestTimeout %v is negative", ErrInvalidArgument, cfg.RequestTimeout)
	}
	keys := keySchema{partitionKey: cfg.PartitionKey, sortKey: cfg.SortKey}
	if keys.partitionKey == "" {
		keys.partitionKey = DefaultPartitionKey
	}
	if err := keys.check(); err != nil {
		return nil, err
	}
	if keys.sortKey != "" {
		if cfg.SortKeyValue == "" {
			return nil, fmt.Errorf("%w: SortKeyValue is empty but the table has sort key %q", ErrInvalidArgument, keys.sortKey)
		}
		if len(cfg.SortKeyValue) > 1024 {
			return nil, fmt.Errorf("%w: SortKeyValue is %d bytes, over DynamoDB's 1024-byte limit", ErrInvalidArgument, len(cfg.SortKeyValue))
		}
	} else if cfg.SortKeyValue != "" {
		return nil, fmt.Errorf("%w: SortKeyValue is set but SortKey is not", ErrInvalidArgument)
	}
	name := cfg.Name
	if keys.sortKey != "" {
		name += "/" + cfg.SortKeyValue
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	return &DynamoDB{
		client:   cfg.Client,
		table:    cfg.Table,
		keys:     keys,
		key:      keys.itemKey(cfg.Name, cfg.SortKeyValue),
		name:     name,
		identity: cfg.Identity,
		timeout:  timeout,
	}, nil
}

// Identity returns the holder identity this lock writes.
func (d *DynamoDB) Identity() string { return d.identity }

// Describe returns "dynamodb:TABLE/NAME".
func (d *DynamoDB) Describe() string { return "dynamodb:" + d.table + "/" + d.name }

// Get reads the record with a strongly consistent GetItem.
func (d *DynamoDB) Get(ctx context.Context) (Record, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.table),
		Key:            d.key,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, d.wrap("get", err)
	}
	if len(out.Item) == 0 {
		return Record{}, fmt.Errorf("%s: %w", d.Describe(), ErrNotFound)
	}
	rec, err := decodeRecord(out.Item)
	if err != nil {
		return Record{}, fmt.Errorf("%s: %w", d.Describe(), err)
	}
	return rec, nil
}

// Create writes rec with one UpdateItem conditioned on the item being absent
// or released.
func (d *DynamoDB) Create(ctx context.Context, rec Record) (Record, error) {
	rec, err := prepareWrite(d.identity, rec)
	if err != nil {
		return Record{}, err
	}
	e := newExpression()
	update := writeUpdate(e, rec, true)
	return d.update(ctx, "create", e, update, d.keys.createCondition(e))
}

// Update writes rec with one UpdateItem conditioned on expect.
func (d *DynamoDB) Update(ctx context.Context, expect Precondition, rec Record) (Record, error) {
	if err := checkPrecondition(expect); err != nil {
		return Record{}, err
	}
	rec, err := prepareWrite(d.identity, rec)
	if err != nil {
		return Record{}, err
	}
	e := newExpression()
	update := writeUpdate(e, rec, expect.Owner == "")
	return d.update(ctx, "update", e, update, d.keys.updateCondition(e, expect))
}

func (d *DynamoDB) update(ctx context.Context, op string, e *expression, update, condition string) (Record, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	out, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.table),
		Key:                       d.key,
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(condition),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return Record{}, d.wrap(op, err)
	}
	stored, err := decodeRecord(out.Attributes)
	if err != nil {
		// The write landed; only its echo is unreadable.
		return Record{}, fmt.Errorf("%s: %s landed but its result is unreadable: %w", d.Describe(), op, err)
	}
	return stored, nil
}

// wrap classifies a DynamoDB error: a failed condition becomes ErrConflict,
// a missing table ErrTableNotFound; anything else keeps its cause.
func (d *DynamoDB) wrap(op string, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%s: %s: %w (%w)", d.Describe(), op, ErrConflict, err)
	}
	return wrapTableError(d.table, fmt.Sprintf("%s: %s", d.Describe(), op), err)
}

// wrapTableError marks a missing-table error with ErrTableNotFound, keeping
// the SDK's error as a second cause.
func wrapTableError(table, what string, err error) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return fmt.Errorf("%s: table %q: %w (%w)", what, table, ErrTableNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
