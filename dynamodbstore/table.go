package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/timing"
)

// TableAPI is the part of the DynamoDB client that CreateTable uses.
// *dynamodb.Client satisfies it.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// TableOptions configures CreateTable. The zero value makes an on-demand
// table keyed by DefaultPartitionKeyAttribute alone.
type TableOptions struct {
	// PartitionKeyAttribute is the partition key attribute name (type S);
	// DefaultPartitionKeyAttribute when empty.
	PartitionKeyAttribute string
	// SortKeyAttribute is the sort key attribute name (type S); none when empty.
	SortKeyAttribute string
	// TTLAttribute, when not empty, is the attribute on which CreateTable
	// enables DynamoDB's Time to Live once the table is ACTIVE, unless TTL
	// is already enabled on it. It must be the TTLAttribute of the stores
	// that use the table (DefaultTTLAttribute unless they configure
	// another). Empty leaves the table's TTL setting alone.
	TTLAttribute string
	// Provisioned selects provisioned capacity with this throughput (both
	// units positive); nil selects on-demand (pay-per-request) billing.
	Provisioned *types.ProvisionedThroughput
	// PollInterval is the wait between checks for the table to become
	// ACTIVE; 250 ms when zero.
	PollInterval time.Duration
	// Clock times the waits; the real clock when nil.
	Clock clock.WithTickerAndDelayedExecution
}

// CreateTable makes a lock table called table and waits until it is ACTIVE.
// It succeeds without change when the table already exists with the key
// schema opts asks for, and fails with an error matching resourcelock.ErrPermanent
// when it exists with another. Billing mode and capacity of an existing
// table are not checked. The wait is bounded only by ctx.
//
// When opts.TTLAttribute is set, CreateTable then enables TTL on that
// attribute, new table or not. It fails with an error wrapping
// that error when the table has TTL enabled on another attribute,
// which DynamoDB allows only one of.
func CreateTable(ctx context.Context, client TableAPI, table string, opts TableOptions) error {
	keys := keySchema{partitionKey: opts.PartitionKeyAttribute, sortKey: opts.SortKeyAttribute, ttl: opts.TTLAttribute}
	if keys.partitionKey == "" {
		keys.partitionKey = DefaultPartitionKeyAttribute
	}
	if err := keys.check(); err != nil {
		return err
	}
	ttl := keys.ttl
	keys.ttl = "" // the key schema DescribeTable shows has no TTL
	if table == "" {
		return fmt.Errorf("%w: table name is empty", dynalease.ErrInvalid)
	}
	if p := opts.Provisioned; p != nil && (aws.ToInt64(p.ReadCapacityUnits) <= 0 || aws.ToInt64(p.WriteCapacityUnits) <= 0) {
		return fmt.Errorf("%w: provisioned capacity of %d reads and %d writes must be positive", dynalease.ErrInvalid,
			aws.ToInt64(p.ReadCapacityUnits), aws.ToInt64(p.WriteCapacityUnits))
	}
	clk := timing.OrReal(opts.Clock)
	poll := opts.PollInterval
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}

	desc, err := describeTable(ctx, client, table)
	if errors.Is(err, errTableNotFound) {
		_, err = client.CreateTable(ctx, createTableInput(table, keys, opts.Provisioned))
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) { // in use: someone else created it meanwhile
			return fmt.Errorf("resourcelock: create table %q: %w", table, err)
		}
		desc, err = describeTable(ctx, client, table)
	}
	for {
		if err != nil {
			return err
		}
		if err := checkKeySchema(table, desc, keys); err != nil {
			return err
		}
		if desc.TableStatus == types.TableStatusActive {
			if ttl == "" {
				return nil
			}
			return enableTTL(ctx, client, table, ttl)
		}
		if err := timing.Sleep(ctx, clk, poll, "create-table"); err != nil {
			return fmt.Errorf("resourcelock: waiting for table %q to become active (status %s): %w", table, desc.TableStatus, err)
		}
		desc, err = describeTable(ctx, client, table)
	}
}

// enableTTL enables TTL on attr unless DescribeTimeToLive shows it enabled
// (or being enabled) there already.
func enableTTL(ctx context.Context, client TableAPI, table, attr string) error {
	cur, err := describeTTL(ctx, client, table)
	if err != nil {
		return err
	}
	if done, err := ttlOn(table, cur, attr); done || err != nil {
		return err
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attr),
			Enabled:       aws.Bool(true),
		},
	})
	if err == nil {
		return nil
	}
	// Another process may have enabled it meanwhile, after which DynamoDB
	// refuses to enable it again.
	if again, derr := describeTTL(ctx, client, table); derr == nil {
		if done, merr := ttlOn(table, again, attr); done || merr != nil {
			return merr
		}
	}
	return fmt.Errorf("resourcelock: enable TTL on attribute %q of table %q: %w", attr, table, wrapTableError(table, "update time to live", err))
}

func describeTTL(ctx context.Context, client TableAPI, table string) (*types.TimeToLiveDescription, error) {
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return nil, wrapTableError(table, "resourcelock: describe time to live", err)
	}
	return out.TimeToLiveDescription, nil
}

// ttlOn reports whether d shows TTL enabled or being enabled on attr. TTL
// enabled or being enabled on another attribute is an error wrapping
// that error.
func ttlOn(table string, d *types.TimeToLiveDescription, attr string) (bool, error) {
	if d == nil {
		return false, nil
	}
	switch d.TimeToLiveStatus {
	case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
		if got := aws.ToString(d.AttributeName); got != attr {
			return false, fmt.Errorf("%w: table %q has TTL %s on attribute %q, want it on %q",
				errTableMismatch, table, strings.ToLower(string(d.TimeToLiveStatus)), got, attr)
		}
		return true, nil
	}
	return false, nil
}

func describeTable(ctx context.Context, client TableAPI, table string) (*types.TableDescription, error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, wrapTableError(table, "resourcelock: describe table", err)
	}
	if out.Table == nil {
		return nil, fmt.Errorf("resourcelock: describe table %q returned no description", table)
	}
	return out.Table, nil
}

func createTableInput(table string, keys keySchema, p *types.ProvisionedThroughput) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(keys.partitionKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(keys.partitionKey), KeyType: types.KeyTypeHash},
		},
		BillingMode: types.BillingModePayPerRequest,
	}
	if keys.sortKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(keys.sortKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema,
			types.KeySchemaElement{AttributeName: aws.String(keys.sortKey), KeyType: types.KeyTypeRange})
	}
	if p != nil {
		in.BillingMode = types.BillingModeProvisioned
		in.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: p.ReadCapacityUnits, WriteCapacityUnits: p.WriteCapacityUnits}
	}
	return in
}

// checkKeySchema compares an existing table's key with the one wanted.
func checkKeySchema(table string, desc *types.TableDescription, want keySchema) error {
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, a := range desc.AttributeDefinitions {
		attrTypes[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	var got keySchema
	for _, k := range desc.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			got.partitionKey = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			got.sortKey = aws.ToString(k.AttributeName)
		}
	}
	bad := got != want || attrTypes[got.partitionKey] != types.ScalarAttributeTypeS ||
		(got.sortKey != "" && attrTypes[got.sortKey] != types.ScalarAttributeTypeS)
	if bad {
		return fmt.Errorf("%w: table %q has key (partition %q %s, sort %q %s), want (partition %q S, sort %q S)",
			errTableMismatch, table, got.partitionKey, attrTypes[got.partitionKey], got.sortKey, attrTypes[got.sortKey],
			want.partitionKey, want.sortKey)
	}
	return nil
}
