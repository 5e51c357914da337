package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/ledger"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/schedule"
)

// The deliberately broken variants with which make test proves that the
// checker can fail. They are wrappers around the library, here in chaos/,
// not builds of it: the library holds no broken code.
const (
	// brokenGuard rewrites the lock check of every guarded write (the
	// ConditionCheck on the lock table) into one that admits any row: a
	// write held past its holder's lease then commits after the next
	// holder's.
	brokenGuard = "guard"
	// brokenTerm makes the leader advertise in the record a lease half its
	// renew deadline: waiters take over while it still believes it leads
	// for the whole renew deadline, as a leader whose term outlived the
	// lease others wait would.
	brokenTerm = "term"
	// brokenSet takes a set's first key alone, as a set taken member by
	// member that stopped after its first would be held: the worker then
	// believes it holds the other key while somebody else does.
	brokenSet = "set"
	// brokenPermit asks the semaphore for one permit more than the run's
	// bound: more holders than the bound then hold permits at once.
	brokenPermit = "permit"
	// brokenLedger runs the chaos job with a ledger that is not written
	// with the lock: a worker reads the job's last started slot, takes the
	// lock by an ordinary write, runs the slot, and records it only as it
	// releases. Two workers that read before either records start a slot
	// twice.
	brokenLedger = "ledger"
	// brokenRW makes the writers of the read-write key take it shared:
	// a writer then holds together with readers, and with other writers.
	brokenRW = "rw"
)

// admitAnyLockCheck is a client option that rewrites the lock check of
// every TransactWriteItems (the ConditionCheck on table) to admit any row.
func admitAnyLockCheck(table string) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("ChaosBrokenGuard",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if tw, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
						for _, it := range tw.TransactItems {
							if c := it.ConditionCheck; c != nil && aws.ToString(c.TableName) == table {
								c.ConditionExpression = aws.String("attribute_exists(#chaos) OR attribute_not_exists(#chaos)")
								c.ExpressionAttributeNames = map[string]string{"#chaos": "ownerName"}
								c.ExpressionAttributeValues = nil
							}
						}
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		})
	}
}

// shortLeaseStore writes every record with an advertised lease of lease
// instead of its own (see brokenTerm). Its other methods, Guard included,
// are the store's.
type shortLeaseStore struct {
	rows.Store
	lease time.Duration
}

func (s shortLeaseStore) Create(ctx context.Context, key resourcelock.Key, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	rec.LeaseDuration = s.lease
	return s.Store.Create(ctx, key, rec, opts)
}

func (s shortLeaseStore) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	rec.LeaseDuration = s.lease
	return s.Store.Update(ctx, key, expect, rec, opts)
}

// electionStore returns the worker's store of the election record: the
// library's, or under brokenTerm one that advertises half the renew
// deadline.
func (w *worker) electionStore() (resourcelock.Store, error) {
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: w.ddb, Table: w.cfg.locks, FenceTable: w.cfg.fences})
	if err != nil || w.cfg.broken != brokenTerm {
		return store, err
	}
	return rows.Sealed(shortLeaseStore{Store: rows.MustOpen(store), lease: w.cfg.renew / 2}), nil
}

// checkBroken refuses an unknown variant.
func checkBroken(v string) error {
	switch v {
	case "", brokenGuard, brokenTerm, brokenSet, brokenPermit, brokenLedger, brokenRW:
		return nil
	}
	return fmt.Errorf("unknown broken variant %q (want %q, %q, %q, %q, %q or %q)", v, brokenGuard, brokenTerm, brokenSet, brokenPermit, brokenLedger, brokenRW)
}

// ledgered is package lock's bridge to a scheduled job's ledger
// (internal/ledger), which the broken job reads and writes as package
// schedule does.
var ledgered = ledger.Lock[lock.AcquireOption, lock.ReleaseOption, lock.Info, *lock.Client]()

// brokenJobs is the chaos job under brokenLedger: see there.
func (w *worker) brokenJobs(ctx context.Context, c *lock.Client, every schedule.Schedule, wall offsetClock) {
	key := schedule.DefaultKeyPrefix + jobName
	for ctx.Err() == nil {
		slot := every.Next(wall.Now())
		select {
		case <-ctx.Done():
			return
		case <-w.clk.After(slot.Sub(wall.Now())):
		}
		run := slot.UnixMilli()*1000 + 1
		if info, err := c.Get(ctx, key); err == nil && ledgered.Numbers(info)["jobRun"] >= run {
			continue // started already, as far as this read shows
		}
		actx, cancel := context.WithTimeout(ctx, w.cfg.lockLease)
		l, err := c.Acquire(actx, key)
		cancel()
		if err != nil {
			continue
		}
		rctx, rcancel := l.Context(ctx)
		w.runSlot(rctx, wall, slot, 1, run)
		rcancel()
		_ = l.Release(context.WithoutCancel(ctx), ledgered.Close(map[string]int64{"jobRun": run}))
	}
}
