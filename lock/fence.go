package lock

import (
	"context"
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Token returns the lock's fencing token, or 0 when the client was made
// without Config.Fencing. Tokens of one key grow with every acquisition; a
// resource that remembers the largest token it has seen and refuses writes
// carrying a smaller one cannot be written by a holder that lost its lock
// while paused. Heartbeats do not change it.
//
// For a read-modify-write that is not enough on its own: a stale write can
// still land between a newer holder's read and its write. Raise the
// resource's fence to the token before reading (as examples/inventory
// does), or make the write conditional on the value read as well.
func (l *Lock) Token() int64 {
	if !l.c.cfg.fencing {
		// The row may still carry a counter (another client fences it),
		// but this client never gave it a generation: not a token.
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.row.token
}

// Guard commits items, writes of the caller's own on any tables, in one
// DynamoDB transaction together with a check that the lock row still shows
// this acquisition (holder identity and acquisition id, not released). A holder that
// lost the lock — paused, partitioned, or simply too late — therefore
// cannot commit anything: the error matches dynalease.ErrLost (and
// resourcelock.ErrGuardLost) and nothing was applied; the lock is then
// marked lost.
//
// Other errors: an *dynamodbstore.ItemConditionError when one of the
// caller's own conditions failed (nothing applied);
// resourcelock.ErrContention when concurrent writes kept
// cancelling it (nothing applied; transient conflicts with the lock's own
// heartbeats are retried first); an error matching dynalease.ErrInvalid for
// items refused before any request (one on the lock row itself, or too
// many for one transaction); dynalease.ErrInvalid on an MRSC
// global table, which has no transactions (nothing sent). Any other error
// leaves the outcome unknown, as for any DynamoDB write whose answer was
// lost.
//
// Guard refuses at once, without a request, a lock that is already known
// to be released or lost. It takes up to 99 items by default: DynamoDB
// allows 100 actions per transaction, and one checks the lock row (see
// dynamodbstore.Config.MaxTransactItems). A lock on a set of keys (AcquireSet) checks
// every key's row in the same transaction, and takes that many fewer
// items; losing any key fails the write as losing the lock does.
func (l *Lock) Guard(ctx context.Context, items ...types.TransactWriteItem) (err error) {
	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	g, ok := l.c.store.(guardStore)
	if !ok {
		l.mu.Unlock()
		return invalid("store", "the store cannot run guarded writes")
	}
	h := resourcelock.Holding{HolderIdentity: l.c.cfg.identity, AcquisitionID: l.row.acquisitionID}
	l.mu.Unlock()
	keys := []resourcelock.Key{l.lease.Key()}
	if set := l.claim.set; set != nil {
		keys = set.keys
	}
	ctx, span := l.startCall(ctx, "dynalease.lock.guard")
	started := l.c.clk.Now()
	err = g.GuardKeys(ctx, keys, h, items)
	l.c.observeRequest("guard", err, l.c.clk.Since(started))
	outcome := rvnlease.GuardOutcome(err)
	l.c.cfg.metrics.GuardedWrite(outcome)
	if span.IsRecording() {
		span.SetAttributes(tracing.ItemsWritten.Int(len(items)))
	}
	defer func() { endCall(span, outcome, err) }() // the error Guard returns: a loss as LostError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, dynalease.ErrInvalid):
		return refused("items", err)
	case errors.Is(err, resourcelock.ErrGuardLost):
		// The server's verdict is what the caller needs (nothing was
		// applied), even when the lock ended locally while the request
		// was in flight.
		lost := l.setLoss(l.hold.Lost(context.WithoutCancel(ctx), l.lease.Key().String(), err))
		l.mu.Lock()
		defer l.mu.Unlock()
		l.loseLocked(lost)
		return lost
	}
	return err
}

// guardStore is a store that can guard writes on its rows: the capability
// Guard looks for (dynamodbstore.Store has it).
type guardStore interface {
	GuardKeys(ctx context.Context, keys []resourcelock.Key, h resourcelock.Holding, items []types.TransactWriteItem) error
}

// Fence is a condition and an update that fence a caller's own DynamoDB
// item with a lock's token: the write is admitted only if the item has no
// fence yet or one no larger than the token (equal is admitted, so the
// same holder can write twice), and it records the token. Add Names and
// Values to the write's expression attribute maps; the placeholders are
// chosen not to clash with the caller's own.
type Fence struct {
	// Condition is `attribute_not_exists(fence) OR fence <= token`; combine
	// it with the write's own condition with AND.
	Condition string
	// Set is the SET clause `fence = token`; append it to an update's SET
	// list, or use FencedItem for a Put.
	Set    string
	Names  map[string]string
	Values map[string]types.AttributeValue

	attribute string
	token     int64
}

// FenceWith returns the Fence of token on the attribute named attribute of
// the caller's item.
func FenceWith(attribute string, token int64) (Fence, error) {
	if attribute == "" {
		return Fence{}, invalid("attribute", "fence attribute name is empty")
	}
	if token <= 0 {
		return Fence{}, invalid("Fencing", "fencing token %d: the client has no fencing (Config.Fencing)", token)
	}
	return Fence{
		Condition: "(attribute_not_exists(#dynaleaseFence) OR #dynaleaseFence <= :dynaleaseToken)",
		Set:       "#dynaleaseFence = :dynaleaseToken",
		Names:     map[string]string{"#dynaleaseFence": attribute},
		Values:    map[string]types.AttributeValue{":dynaleaseToken": &types.AttributeValueMemberN{Value: strconv.FormatInt(token, 10)}},
		attribute: attribute,
		token:     token,
	}, nil
}

// Item returns a copy of item with the fence attribute set to the token,
// for a fenced Put.
func (f Fence) Item(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(item)+1)
	for k, v := range item {
		out[k] = v
	}
	out[f.attribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(f.token, 10)}
	return out
}

// Merge adds the fence's placeholders to the write's maps, creating them
// when nil, and returns them.
func (f Fence) Merge(names map[string]string, values map[string]types.AttributeValue) (map[string]string, map[string]types.AttributeValue) {
	if names == nil {
		names = map[string]string{}
	}
	if values == nil {
		values = map[string]types.AttributeValue{}
	}
	for k, v := range f.Names {
		names[k] = v
	}
	for k, v := range f.Values {
		values[k] = v
	}
	return names, values
}
