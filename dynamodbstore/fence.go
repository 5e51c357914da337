package dynamodbstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Attributes of a fence table row.
const (
	fenceKeyAttr        = DefaultPartitionKeyAttribute
	fenceGenerationAttr = "generation"
)

// fenceKey is the fence table's key for a lock key: length-prefixed so
// that no two lock keys share one.
func fenceKey(k resourcelock.Key) string {
	return strconv.Itoa(len(k.Partition)) + ":" + k.Partition + k.Sort
}

// Fence bumps key's generation in the fence table, then writes it into the
// lock row (with the counter at 2), conditioned on holder and acquisition.
// A bump whose row write fails is simply skipped: generations only need to
// grow.
func (d *rowStore) Fence(ctx context.Context, key resourcelock.Key, holder, acquisitionID string) (rows.Item, error) {
	if d.fenceTable == "" {
		return rows.Item{}, fmt.Errorf("%s: %w", d.describeKey(key), dynalease.ErrInvalid)
	}
	if err := d.keys.checkKey(key); err != nil {
		return rows.Item{}, err
	}
	if holder == "" || acquisitionID == "" {
		return rows.Item{}, fmt.Errorf("%w: Fence needs a holder and an acquisition id", dynalease.ErrInvalid)
	}
	if err := d.readyFence(ctx); err != nil {
		return rows.Item{}, err
	}
	gen, err := d.bumpGeneration(ctx, key)
	if err != nil {
		return rows.Item{}, err
	}
	if gen > rows.MaxFenceGeneration {
		return rows.Item{}, fmt.Errorf("%s: fencing generation %d is over the limit %d", d.describeKey(key), gen, int64(rows.MaxFenceGeneration))
	}
	e := newExpression()
	update := "SET " + e.name(attrGeneration) + " = " + e.value(&types.AttributeValueMemberN{Value: strconv.FormatInt(gen, 10)}) +
		", " + e.name(attrTransitions) + " = " + e.value(&types.AttributeValueMemberN{Value: "2"})
	cond := "attribute_exists(" + e.name(d.keys.partitionKey) + ") AND " +
		e.name(attrOwner) + " = " + e.value(s(holder)) + " AND " +
		e.name(attrAcquisition) + " = " + e.value(s(acquisitionID))
	return d.update(ctx, key, "fence", e, update, cond)
}

func (d *Store) bumpGeneration(ctx context.Context, key resourcelock.Key) (int64, error) {
	ctx, cancel := d.bound(ctx)
	defer cancel()
	out, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.fenceTable),
		Key:                       map[string]types.AttributeValue{fenceKeyAttr: s(fenceKey(key))},
		UpdateExpression:          aws.String("ADD #g :one"),
		ExpressionAttributeNames:  map[string]string{"#g": fenceGenerationAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, wrapTableError(d.fenceTable, fmt.Sprintf("%s: bump fencing generation", d.describeKey(key)), err)
	}
	n, ok := out.Attributes[fenceGenerationAttr].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("%s: bump fencing generation: no generation in the answer", d.describeKey(key))
	}
	gen, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: bump fencing generation: %q is not an integer", d.describeKey(key), n.Value)
	}
	return gen, nil
}
