package dynamodbstore

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/timing"
)

// transactWrite sends items in one TransactWriteItems, and sends them again
// (a new request, with a new idempotency token), up to guardRetries times
// 20 ms × try apart, while DynamoDB cancels it only for transaction
// conflicts (concurrent writes to its items: nothing was applied). It
// returns the last answer's error, nil once one commits.
func (d *Store) transactWrite(ctx context.Context, api TransactAPI, items []types.TransactWriteItem) error {
	var err error
	for try := 0; try < guardRetries; try++ {
		if try > 0 {
			if d.onConflict != nil {
				d.onConflict()
			}
			if werr := timing.Sleep(ctx, d.clock, time.Duration(try)*20*time.Millisecond, "transaction"); werr != nil {
				return werr
			}
		}
		tctx, cancel := d.bound(ctx)
		_, err = api.TransactWriteItems(tctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		cancel()
		if !onlyConflicts(err) {
			return err
		}
	}
	return err
}

// transactGet reads gets in one TransactGetItems, tried again like
// transactWrite while it is cancelled only for transaction conflicts (a
// write to one of its items under way: DynamoDB cancels a transactional
// read then, which holders renewing make common).
func (d *Store) transactGet(ctx context.Context, api TransactAPI, gets []types.TransactGetItem) (*dynamodb.TransactGetItemsOutput, error) {
	var out *dynamodb.TransactGetItemsOutput
	var err error
	for try := 0; try < guardRetries; try++ {
		if try > 0 {
			if werr := timing.Sleep(ctx, d.clock, time.Duration(try)*20*time.Millisecond, "transaction"); werr != nil {
				return nil, werr
			}
		}
		tctx, cancel := d.bound(ctx)
		out, err = api.TransactGetItems(tctx, &dynamodb.TransactGetItemsInput{TransactItems: gets})
		cancel()
		if !onlyConflicts(err) {
			return out, err
		}
	}
	return nil, err
}

// onlyConflicts reports whether err is a cancelled transaction whose only
// reasons are transaction conflicts.
func onlyConflicts(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	verdict, _ := classifyCancel(tce.CancellationReasons, 0)
	return verdict == cancelConflict
}
