package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// MaxMany returns the most rows one GetMany or WriteMany may name: the
// store's MaxTransactItems (DynamoDB's 100 by default).
func (d *rowStore) MaxMany() int { return d.maxItems }

// GetMany reads the rows at keys with one TransactGetItems: a snapshot of
// them all, each read strongly consistently. It reads only the record's
// attributes, and the queue of the first key (the rows it returns have no
// data, attributes or TTL, and the others no queue), so that a response
// stays below the 4 MB a TransactGetItems may return: 100 records and one
// full queue (about 54 KB with the longest identities). It costs two read units per row of up to 4 KB. A read
// cancelled by writes to its rows under way is tried again a few times,
// then returns an error wrapping resourcelock.ErrContention.
func (d *rowStore) GetMany(ctx context.Context, keys []resourcelock.Key) (map[resourcelock.Key]rows.Item, error) {
	api, ok := d.client.(TransactAPI)
	if !ok {
		return nil, fmt.Errorf("%w: the DynamoDB client has no TransactGetItems", dynalease.ErrInvalid)
	}
	if err := record.CheckMany(keys, d.maxItems); err != nil {
		return nil, err
	}
	if err := d.noTransactions(ctx, "read of several found", false); err != nil {
		return nil, err
	}
	proj, names := d.keys.recordProjection(false)
	firstProj, firstNames := d.keys.recordProjection(true)
	gets := make([]types.TransactGetItem, len(keys))
	for i, k := range keys {
		if err := d.keys.checkKey(k); err != nil {
			return nil, err
		}
		p, n := proj, names
		if i == 0 {
			p, n = firstProj, firstNames
		}
		gets[i] = types.TransactGetItem{Get: &types.Get{TableName: aws.String(d.table), Key: d.keys.itemKey(k.Partition, k.Sort),
			ProjectionExpression: aws.String(p), ExpressionAttributeNames: n}}
	}
	out, err := d.transactGet(ctx, api, gets)
	if onlyConflicts(err) {
		return nil, fmt.Errorf("%s: get: %w (%w)", d.describeMany(keys), resourcelock.ErrContention, err)
	} else if err != nil {
		return nil, wrapTableError(d.table, d.describeMany(keys)+": get", err)
	}
	if len(out.Responses) != len(keys) {
		return nil, fmt.Errorf("%s: get: %d responses to %d reads", d.describeMany(keys), len(out.Responses), len(keys))
	}
	found := make(map[resourcelock.Key]rows.Item, len(keys))
	for i, r := range out.Responses {
		if len(r.Item) == 0 {
			continue
		}
		it, err := d.keys.decodeItem(r.Item)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.describeKey(keys[i]), err)
		}
		found[keys[i]] = it
	}
	return found, nil
}

// WriteMany applies writes with one TransactWriteItems: all of them or
// none. It costs two write units per row of up to 1 KB. The SDK gives the
// request an idempotency token, so that its own retry of an attempt that
// landed is acknowledged without being applied twice.
//
// A failed condition of any row returns a rows.Conflict carrying
// no row. A cancellation by concurrent writes to the same rows
// (TransactionConflict) applied nothing either: it is sent again a few
// times, then returned as a Conflict too (wrapping
// resourcelock.ErrContention), after which the caller reads to learn more.
func (d *rowStore) WriteMany(ctx context.Context, writes []rows.Write) error {
	api, ok := d.client.(TransactAPI)
	if !ok {
		return fmt.Errorf("%w: the DynamoDB client has no TransactWriteItems", dynalease.ErrInvalid)
	}
	writes, err := record.PrepareMany(writes, d.maxItems)
	if err != nil {
		return err
	}
	if err := d.noTransactions(ctx, "write of several found", false); err != nil {
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
	err = d.transactWrite(ctx, api, items)
	if err == nil {
		return nil
	}
	what := d.describeMany(keys) + ": write"
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return wrapTableError(d.table, what, err)
	}
	switch verdict, index := classifyCancel(tce.CancellationReasons, len(keys)); verdict {
	case cancelLost:
		return rows.Conflict(fmt.Sprintf("%s (%s)", what, keys[index]), nil, err)
	case cancelConflict:
		// Concurrent writes kept cancelling it: nothing was applied, as
		// when a condition fails; the caller reads to learn more.
		return rows.Conflict(what, nil, fmt.Errorf("%w (%w)", resourcelock.ErrContention, err))
	}
	return fmt.Errorf("%s: cancelled (%s), nothing applied: %w", what, reasonCodes(tce.CancellationReasons), wrapTableError(d.table, what, err))
}

// transactItem returns the transaction item of one write, with the
// expressions the single-row writes use.
func (d *Store) transactItem(w rows.Write) (types.TransactWriteItem, error) {
	if err := d.keys.checkKey(w.Key); err != nil {
		return types.TransactWriteItem{}, err
	}
	e := newExpression()
	key := d.keys.itemKey(w.Key.Partition, w.Key.Sort)
	if w.Kind == rows.WriteRemove {
		cond := d.keys.removeCondition(e, w.Expect)
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(d.table), Key: key, ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
		}}, nil
	}
	if err := d.keys.checkOptions(w.Options); err != nil {
		return types.TransactWriteItem{}, err
	}
	var update, cond string
	if w.Kind == rows.WriteCreate {
		update = writeItemUpdate(e, d.keys, w.Record, true, w.Options)
		cond = d.keys.memberCreateCondition(e)
	} else {
		update = writeItemUpdate(e, d.keys, w.Record, w.Expect.HolderIdentity == "", w.Options)
		cond = d.keys.updateCondition(e, w.Expect)
	}
	cond = withDequeue(e, cond, w.Options.Dequeue)
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(d.table), Key: key, UpdateExpression: aws.String(update), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
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

// fenceManyTries bounds the rounds of FenceMany whose fence-table
// condition failed because a generation grew between its read and its
// write.
const fenceManyTries = 3

// maxFenceMany returns half of MaxMany: FenceMany writes a fence-table row
// and a lock row per key in one transaction.
func (d *Store) maxFenceMany() int { return d.maxItems / 2 }

// FenceMany reads the keys' generations from the fence table in one
// TransactGetItems, then in one TransactWriteItems raises each to one more
// than the largest (conditioned on each still being below it) and writes
// it into every lock row with the counter at 2 (conditioned on holder and
// acquisition). A generation that grew meanwhile cancels the transaction,
// which is read and tried again.
func (d *rowStore) FenceMany(ctx context.Context, keys []resourcelock.Key, holder, acquisitionID string) (int64, error) {
	if d.fenceTable == "" {
		return 0, fmt.Errorf("%s: %w", d.describeMany(keys), dynalease.ErrInvalid)
	}
	if err := record.CheckMany(keys, d.maxFenceMany()); err != nil {
		return 0, err
	}
	if holder == "" || acquisitionID == "" {
		return 0, fmt.Errorf("%w: FenceMany needs a holder and an acquisition id", dynalease.ErrInvalid)
	}
	if err := d.noTransactions(ctx, "fence of several found", true); err != nil {
		return 0, err
	}
	api, ok := d.client.(TransactAPI)
	if !ok {
		return 0, fmt.Errorf("%w: the DynamoDB client has no TransactGetItems or TransactWriteItems", dynalease.ErrInvalid)
	}
	what := d.describeMany(keys) + ": fence"
	var err error
	for try := 0; try < fenceManyTries; try++ {
		var gen int64
		if gen, err = d.nextGeneration(ctx, api, keys); err != nil {
			return 0, err
		}
		if gen > rows.MaxFenceGeneration {
			return 0, fmt.Errorf("%s: fencing generation %d is over the limit %d", what, gen, int64(rows.MaxFenceGeneration))
		}
		if err = d.transactWrite(ctx, api, d.fenceItems(keys, gen, holder, acquisitionID)); err == nil {
			return gen, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return 0, wrapTableError(d.table, what, err)
		}
		if ferr := d.fenceCancelled(tce, keys, what, err); ferr != nil {
			return 0, ferr
		}
	}
	return 0, fmt.Errorf("%s: generations kept changing (%d tries): %w", what, fenceManyTries, err)
}

// fenceItems returns the writes of a FenceMany of keys to generation gen:
// each key's fence-table row raised to gen (conditioned on being below
// it), then each lock row given gen and the counter 2 (conditioned on
// holder and acquisition).
func (d *Store) fenceItems(keys []resourcelock.Key, gen int64, holder, acquisitionID string) []types.TransactWriteItem {
	g := &types.AttributeValueMemberN{Value: strconv.FormatInt(gen, 10)}
	items := make([]types.TransactWriteItem, 0, 2*len(keys))
	for _, k := range keys {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(d.fenceTable),
			Key:                       map[string]types.AttributeValue{fenceKeyAttr: s(fenceKey(k))},
			UpdateExpression:          aws.String("SET #g = :g"),
			ConditionExpression:       aws.String("attribute_not_exists(#g) OR #g < :g"),
			ExpressionAttributeNames:  map[string]string{"#g": fenceGenerationAttr},
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": g},
		}})
	}
	for _, k := range keys {
		e := newExpression()
		update := "SET " + e.name(attrGeneration) + " = " + e.value(g) + ", " + e.name(attrTransitions) + " = " + e.value(&types.AttributeValueMemberN{Value: "2"})
		cond := "attribute_exists(" + e.name(d.keys.partitionKey) + ") AND " +
			e.name(attrOwner) + " = " + e.value(s(holder)) + " AND " + e.name(attrAcquisition) + " = " + e.value(s(acquisitionID))
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(d.table), Key: d.keys.itemKey(k.Partition, k.Sort),
			UpdateExpression: aws.String(update), ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
		}})
	}
	return items
}

// fenceCancelled returns the error that ends a FenceMany whose transaction
// was cancelled (tce, err): a conflict when a lock row no longer shows the
// acquisition, the cancellation when no reason says to try again; nil
// when a generation grew since it was read, or a transaction conflict:
// the next round reads and tries again.
func (d *Store) fenceCancelled(tce *types.TransactionCanceledException, keys []resourcelock.Key, what string, err error) error {
	retry := false
	for i, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			if i >= len(keys) {
				return rows.Conflict(fmt.Sprintf("%s (%s)", what, keys[i-len(keys)]), nil, err)
			}
			retry = true // a generation grew since it was read
		case "TransactionConflict":
			retry = true
		}
	}
	if !retry {
		return fmt.Errorf("%s: cancelled (%s): %w", what, reasonCodes(tce.CancellationReasons), wrapTableError(d.table, what, err))
	}
	return nil
}

// nextGeneration reads the keys' generations in the fence table and
// returns one more than the largest.
func (d *Store) nextGeneration(ctx context.Context, api TransactAPI, keys []resourcelock.Key) (int64, error) {
	gets := make([]types.TransactGetItem, len(keys))
	for i, k := range keys {
		gets[i] = types.TransactGetItem{Get: &types.Get{TableName: aws.String(d.fenceTable), Key: map[string]types.AttributeValue{fenceKeyAttr: s(fenceKey(k))}}}
	}
	out, err := d.transactGet(ctx, api, gets)
	if err != nil {
		return 0, wrapTableError(d.fenceTable, d.describeMany(keys)+": read fencing generations", err)
	}
	var top int64
	for _, r := range out.Responses {
		n, ok := r.Item[fenceGenerationAttr].(*types.AttributeValueMemberN)
		if !ok {
			continue
		}
		g, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: fencing generation %q is not an integer", d.describeMany(keys), n.Value)
		}
		top = max(top, g)
	}
	return top + 1, nil
}

// recordProjection returns the projection of GetMany: the key and the
// record without its data, and the queue when withQueue, with their
// attribute names.
func (s keySchema) recordProjection(withQueue bool) (string, map[string]string) {
	e := newExpression()
	attrs := []string{s.partitionKey, attrOwner, attrLease, attrRVN, attrReleased, attrTransitions,
		attrAcquireTime, attrRenewTime, attrGeneration, attrAcquisition, attrHandedTo}
	if withQueue {
		attrs = append(attrs, attrQueue)
	}
	if s.sortKey != "" {
		attrs = append(attrs, s.sortKey)
	}
	parts := make([]string, len(attrs))
	for i, a := range attrs {
		parts[i] = e.name(a)
	}
	return strings.Join(parts, ", "), e.nameMap()
}
