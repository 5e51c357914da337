package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/resourcelock"
)

// guardRetries is how many times a guarded write cancelled only by a
// TransactionConflict (typically with the lock's own heartbeat) is tried.
const guardRetries = 4

// ItemConditionError reports that the condition of one of the caller's
// items failed (its Index in the caller's list, or -1 when the server gave
// no reasons and the lock row was found intact). Nothing was applied. It
// matches resourcelock.ErrConflict.
type ItemConditionError struct {
	Index int
}

func (e *ItemConditionError) Error() string {
	if e.Index < 0 {
		return "dynamodbstore: guarded write: a condition of the caller's items failed"
	}
	return fmt.Sprintf("dynamodbstore: guarded write: the condition of item %d failed", e.Index)
}

// Is makes an ItemConditionError match resourcelock.ErrConflict.
func (e *ItemConditionError) Is(target error) bool { return target == resourcelock.ErrConflict }

// TransactAPI is the part of the DynamoDB client that guarded writes and
// sets of rows use (TransactWriteItems, TransactGetItems).
// *dynamodb.Client satisfies it.
type TransactAPI interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
}

// Writes returns the guarded write of items (see resourcelock.Guarded),
// for lock.Lock.Guard and election.Elector.Guard: they call it with their
// holding, and Guard commits items with it.
func (d *Store) Writes(items ...types.TransactWriteItem) resourcelock.Guarded {
	return func(ctx context.Context, h resourcelock.Holding) error { return d.Guard(ctx, h, items...) }
}

// Guard commits items, all or nothing, in one TransactWriteItems together
// with a ConditionCheck on each of h's rows: each must still show h (its
// holder identity and acquisition ID, not released). It returns an error
// matching resourcelock.ErrGuardLost when a check fails; an
// *ItemConditionError when one of the items' own conditions fails;
// resourcelock.ErrContention when concurrent writes kept cancelling it
// (conflicts with the lock's own heartbeats are retried first); an error
// matching dynalease.ErrInvalid, before any request, for items it refuses
// (too many for one transaction beside the checks, one on a lock row
// itself, none at all), for a holding without keys, holder or acquisition
// ID, and on an MRSC global table, which has no transactions. Nothing is
// applied in any of those cases. Any other error leaves the outcome
// unknown, as for any DynamoDB write whose answer was lost.
func (d *Store) Guard(ctx context.Context, h resourcelock.Holding, items ...types.TransactWriteItem) error {
	keys := h.Keys
	api, ok := d.client.(TransactAPI)
	if !ok {
		return fmt.Errorf("%w: the DynamoDB client has no TransactWriteItems and TransactGetItems (TransactAPI)", dynalease.ErrInvalid)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		// On the span of the guarded write's caller (lock.Lock.Guard's
		// dynalease.lock.guard): how many items it commits.
		span.SetAttributes(attribute.Int("dynalease.guard.items", len(items)))
	}
	if err := d.checkGuarded(keys, h, items); err != nil {
		return err
	}
	if err := d.noTransactions(ctx, "guarded write", false); err != nil {
		return err
	}
	key := keys[0] // names the request in errors
	all := make([]types.TransactWriteItem, 0, len(keys)+len(items))
	for _, k := range keys {
		e := newExpression()
		cond := e.name(attrOwner) + " = " + e.value(s(h.HolderIdentity)) + " AND " +
			e.name(attrAcquisition) + " = " + e.value(s(h.AcquisitionID)) + " AND (attribute_not_exists(" +
			e.name(attrReleased) + ") OR " + e.name(attrReleased) + " <> " + e.value(s(releasedValue)) + ")"
		all = append(all, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                 aws.String(d.table),
			Key:                       d.keys.itemKey(k.Partition, k.Sort),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
		}})
	}
	all = append(all, items...)

	err := d.transactWrite(ctx, api, all)
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return wrapTableError(d.table, d.describeKey(key)+": guarded write", err)
	}
	switch verdict, index := classifyCancel(tce.CancellationReasons, len(keys)); verdict {
	case cancelLost:
		return fmt.Errorf("%s: %w", d.describeKey(keys[index]), resourcelock.ErrGuardLost)
	case cancelItem:
		return fmt.Errorf("%s: %w", d.describeKey(key), &ItemConditionError{Index: index - len(keys)})
	case cancelConflict:
		return fmt.Errorf("%s: %w (%w)", d.describeKey(key), resourcelock.ErrContention, err)
	case cancelOther:
		return fmt.Errorf("%s: guarded write cancelled (%s), nothing applied: %w", d.describeKey(key), reasonCodes(tce.CancellationReasons), err)
	}
	return d.classifyByReading(ctx, keys, h, err)
}

type cancelVerdict int

const (
	cancelUnknown  cancelVerdict = iota // no reasons given
	cancelLost                          // the lock check failed
	cancelItem                          // a caller's item condition failed
	cancelConflict                      // only transaction conflicts: retry
	cancelOther                         // other reasons: throttling, validation, size
)

// classifyCancel reads a cancelled transaction's reasons. The lock checks
// are its first checks items.
func classifyCancel(reasons []types.CancellationReason, checks int) (cancelVerdict, int) {
	if len(reasons) == 0 {
		return cancelUnknown, 0
	}
	conflict, other := false, false
	for i, r := range reasons {
		switch code := aws.ToString(r.Code); code {
		case "ConditionalCheckFailed":
			if i < checks {
				return cancelLost, i
			}
			return cancelItem, i
		case "TransactionConflict":
			conflict = true
		case "", "None":
		default:
			other = true
		}
	}
	switch {
	case other:
		return cancelOther, 0
	case conflict:
		return cancelConflict, 0
	}
	return cancelUnknown, 0
}

// reasonCodes lists a cancelled transaction's reason codes.
func reasonCodes(reasons []types.CancellationReason) string {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = aws.ToString(r.Code)
	}
	return strings.Join(codes, ", ")
}

// classifyByReading decides, from the lock rows, what cancelled a
// transaction whose reasons were not given.
func (d *Store) classifyByReading(ctx context.Context, keys []resourcelock.Key, h resourcelock.Holding, txErr error) error {
	for _, key := range keys {
		it, err := (&rowStore{d}).Get(ctx, key)
		switch {
		case errors.Is(err, resourcelock.ErrNotFound):
			return fmt.Errorf("%s: %w", d.describeKey(key), resourcelock.ErrGuardLost)
		case err != nil:
			return fmt.Errorf("%s: guarded write cancelled (%w); reading the lock to tell why failed: %w", d.describeKey(key), txErr, err)
		case it.HolderIdentity != h.HolderIdentity || it.AcquisitionID != h.AcquisitionID || it.Released:
			return fmt.Errorf("%s: %w", d.describeKey(key), resourcelock.ErrGuardLost)
		}
	}
	return fmt.Errorf("%s: %w (%w)", d.describeKey(keys[0]), &ItemConditionError{Index: -1}, txErr)
}

// checkGuarded refuses, before any request, a guarded write that could
// never be right.
func (d *Store) checkGuarded(keys []resourcelock.Key, h resourcelock.Holding, items []types.TransactWriteItem) error {
	if len(keys) == 0 {
		return fmt.Errorf("%w: guarded write of a holding that names no lock row", dynalease.ErrInvalid)
	}
	if err := record.CheckMany(keys, d.maxItems-1); err != nil {
		return err
	}
	for _, key := range keys {
		if err := d.keys.checkKey(key); err != nil {
			return err
		}
	}
	if h.HolderIdentity == "" || h.AcquisitionID == "" {
		return fmt.Errorf("%w: guarded write without a holder and an acquisition id", dynalease.ErrInvalid)
	}
	if len(items) == 0 {
		return fmt.Errorf("%w: guarded write with no items", dynalease.ErrInvalid)
	}
	if max := d.maxItems - len(keys); len(items) > max {
		return fmt.Errorf("%w: guarded write of %d items; at most %d fit in one transaction beside the %d lock checks (MaxTransactItems %d; DynamoDB allows %d actions per TransactWriteItems)",
			dynalease.ErrInvalid, len(items), max, len(keys), d.maxItems, maxTransactItemsLimit)
	}
	for i, it := range items {
		table, itemKey, err := d.target(it)
		if err != nil {
			return fmt.Errorf("%w: item %d: %v", dynalease.ErrInvalid, i, err)
		}
		for _, key := range keys {
			if table == d.table && sameKey(itemKey, d.keys.itemKey(key.Partition, key.Sort), d.keys) {
				return fmt.Errorf("%w: item %d writes the lock row %s itself", dynalease.ErrInvalid, i, key)
			}
		}
	}
	return nil
}

// target returns the table and key an item addresses.
func (d *Store) target(it types.TransactWriteItem) (string, map[string]types.AttributeValue, error) {
	n := 0
	var table *string
	var key map[string]types.AttributeValue
	if p := it.Put; p != nil {
		n++
		table, key = p.TableName, p.Item
	}
	if u := it.Update; u != nil {
		n++
		table, key = u.TableName, u.Key
	}
	if del := it.Delete; del != nil {
		n++
		table, key = del.TableName, del.Key
	}
	if c := it.ConditionCheck; c != nil {
		n++
		table, key = c.TableName, c.Key
	}
	if n != 1 {
		return "", nil, fmt.Errorf("has %d operations, want exactly one", n)
	}
	return aws.ToString(table), key, nil
}

// sameKey reports whether item (a key or a whole item) addresses the row
// with key lockKey.
func sameKey(item, lockKey map[string]types.AttributeValue, k keySchema) bool {
	for _, name := range []string{k.partitionKey, k.sortKey} {
		if name == "" {
			continue
		}
		if !reflect.DeepEqual(item[name], lockKey[name]) {
			return false
		}
	}
	return true
}
