package dynamodbstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/resourcelock"
)

// TransactGetAPI is the part of the DynamoDB client that GetMany uses.
// *dynamodb.Client satisfies it.
type TransactGetAPI interface {
	TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
}

var _ resourcelock.ManyStore = (*Store)(nil)

// MaxMany returns the most rows one GetMany or WriteMany may name: the
// store's MaxTransactItems (DynamoDB's 100 by default).
func (d *Store) MaxMany() int { return d.maxItems }

// GetMany reads the rows at keys with one TransactGetItems: a snapshot of
// them all, each read strongly consistently. It costs two read units per
// row of up to 4 KB.
func (d *Store) GetMany(ctx context.Context, keys []resourcelock.Key) (map[resourcelock.Key]resourcelock.Item, error) {
	api, ok := d.client.(TransactGetAPI)
	if !ok {
		return nil, fmt.Errorf("%w: the DynamoDB client has no TransactGetItems", resourcelock.ErrNotMany)
	}
	if err := resourcelock.CheckMany(keys, d.maxItems); err != nil {
		return nil, err
	}
	gets := make([]types.TransactGetItem, len(keys))
	for i, k := range keys {
		if err := d.keys.checkKey(k); err != nil {
			return nil, err
		}
		gets[i] = types.TransactGetItem{Get: &types.Get{TableName: aws.String(d.table), Key: d.keys.itemKey(k.Partition, k.Sort)}}
	}
	ctx, cancel := d.bound(ctx)
	defer cancel()
	out, err := api.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: gets})
	if err != nil {
		return nil, wrapTableError(d.table, d.describeMany(keys)+": get", err)
	}
	if len(out.Responses) != len(keys) {
		return nil, fmt.Errorf("%s: get: %d responses to %d reads", d.describeMany(keys), len(out.Responses), len(keys))
	}
	rows := make(map[resourcelock.Key]resourcelock.Item, len(keys))
	for i, r := range out.Responses {
		if len(r.Item) == 0 {
			continue
		}
		it, err := d.keys.decodeItem(r.Item)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.describeKey(keys[i]), err)
		}
		rows[keys[i]] = it
	}
	return rows, nil
}

// WriteMany applies writes with one TransactWriteItems: all of them or
// none. It costs two write units per row of up to 1 KB. The SDK gives the
// request an idempotency token, so that its own retry of an attempt that
// landed is acknowledged without being applied twice.
//
// A failed condition of any row returns a resourcelock.Conflict carrying
// no row. A cancellation by concurrent writes to the same rows
// (TransactionConflict) applied nothing either; it is returned as it is,
// not as a conflict, and like any failure the caller reads to learn more.
func (d *Store) WriteMany(ctx context.Context, writes []resourcelock.Write) error {
	api, ok := d.client.(TransactAPI)
	if !ok {
		return fmt.Errorf("%w: the DynamoDB client has no TransactWriteItems", resourcelock.ErrNotMany)
	}
	writes, err := resourcelock.PrepareWrites(writes, d.maxItems)
	if err != nil {
		return err
	}
	keys := make([]resourcelock.Key, len(writes))
	items := make([]types.TransactWriteItem, len(writes))
	for i, w := range writes {
		keys[i] = w.Key
		if items[i], err = d.transactItem(w); err != nil {
			return err
		}
	}
	ctx, cancel := d.bound(ctx)
	defer cancel()
	_, err = api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	what := d.describeMany(keys) + ": write"
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return resourcelock.Conflict(fmt.Sprintf("%s (%s)", what, keys[i]), nil, err)
			}
		}
		return fmt.Errorf("%s: cancelled (%s), nothing applied: %w", what, reasonCodes(tce.CancellationReasons), wrapTableError(d.table, what, err))
	}
	return wrapTableError(d.table, what, err)
}

// transactItem returns the transaction item of one write, with the
// expressions the single-row writes use.
func (d *Store) transactItem(w resourcelock.Write) (types.TransactWriteItem, error) {
	if err := d.keys.checkKey(w.Key); err != nil {
		return types.TransactWriteItem{}, err
	}
	e := newExpression()
	key := d.keys.itemKey(w.Key.Partition, w.Key.Sort)
	if w.Kind == resourcelock.WriteRemove {
		cond := d.keys.removeCondition(e, w.Expect)
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(d.table), Key: key, ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
		}}, nil
	}
	if err := d.keys.checkOptions(w.Options); err != nil {
		return types.TransactWriteItem{}, err
	}
	var update, cond string
	if w.Kind == resourcelock.WriteCreate {
		update = writeItemUpdate(e, d.keys, w.Record, true, w.Options)
		cond = d.keys.createCondition(e)
	} else {
		update = writeItemUpdate(e, d.keys, w.Record, w.Expect.HolderIdentity == "", w.Options)
		cond = d.keys.updateCondition(e, w.Expect)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(d.table), Key: key, UpdateExpression: aws.String(update), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}}, nil
}

// describeMany names the rows of a many-row request: the first key and how
// many more.
func (d *Store) describeMany(keys []resourcelock.Key) string {
	if len(keys) == 1 {
		return d.describeKey(keys[0])
	}
	return fmt.Sprintf("%s and %d more", d.describeKey(keys[0]), len(keys)-1)
}
