package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// DescribeAPI is the part of the DynamoDB client that the table check
// uses. *dynamodb.Client satisfies it; a Store refuses a client without it
// unless Config.SkipTableCheck.
type DescribeAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// TableInfo is what DescribeTable says of a table that matters to locks.
type TableInfo struct {
	Table                 string
	PartitionKeyAttribute string
	SortKeyAttribute      string // empty without one
	// Regions are the regions of the table's replicas, other than the
	// one the client talks to; empty for a table that is not global.
	Regions []string
	// Witnesses are the regions of an MRSC table's witnesses.
	Witnesses []string
	// Consistency is the global table's multi-Region consistency:
	// "EVENTUAL" (MREC) or "STRONG" (MRSC); empty when not global.
	Consistency string
	// Version is the table's global tables version ("2019.11.21", or
	// "2017.11.29" for a legacy global table, whose replicas DescribeTable
	// does not list); empty when DescribeTable names none.
	Version string
}

// Global reports whether the table is a global table: it has replicas or
// witnesses in other regions, or DescribeTable names a global tables
// version.
func (t TableInfo) Global() bool {
	return len(t.Regions) > 0 || len(t.Witnesses) > 0 || t.Version != ""
}

// StronglyConsistent reports whether the table is a global table with
// multi-Region strong consistency (MRSC).
func (t TableInfo) StronglyConsistent() bool {
	return t.Global() && t.Consistency == string(types.MultiRegionConsistencyStrong)
}

// Kind names the table's kind: "single-region", "global MREC" or
// "global MRSC".
func (t TableInfo) Kind() string {
	switch {
	case !t.Global():
		return "single-region"
	case t.StronglyConsistent():
		return "global MRSC (multi-Region strong consistency)"
	}
	return "global MREC (multi-Region eventual consistency)"
}

// DescribeLockTable reads what matters to locks of table with one
// DescribeTable.
func DescribeLockTable(ctx context.Context, api DescribeAPI, table string) (TableInfo, error) {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return TableInfo{}, wrapTableError(table, "describe table "+table, err)
	}
	info := TableInfo{Table: table}
	d := out.Table
	if d == nil {
		return info, fmt.Errorf("describe table %s: no table in the answer", table)
	}
	for _, k := range d.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			info.PartitionKeyAttribute = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			info.SortKeyAttribute = aws.ToString(k.AttributeName)
		}
	}
	for _, r := range d.Replicas {
		info.Regions = append(info.Regions, aws.ToString(r.RegionName))
	}
	info.Version = aws.ToString(d.GlobalTableVersion)
	for _, w := range d.GlobalTableWitnesses {
		info.Witnesses = append(info.Witnesses, aws.ToString(w.RegionName))
	}
	if info.Global() {
		info.Consistency = string(d.MultiRegionConsistency)
		if info.Consistency == "" {
			info.Consistency = string(types.MultiRegionConsistencyEventual) // DynamoDB's default
		}
	}
	return info, nil
}

// errEventualGlobalTable is the cause of the refusal, by every request of
// a Store, of a lock or fence table that is a global table with
// multi-Region eventual consistency (MREC), unless
// Config.SingleWriterRegion says that every client writes through one
// region: DynamoDB evaluates a conditional write against the item in the
// region it is sent to, so two clients writing through two regions can
// both acquire one lock, and a fencing generation can go backwards. The
// refusal matches resourcelock.ErrPermanent.
var errEventualGlobalTable = errors.New("dynamodbstore: the table is a global table with multi-Region eventual consistency (MREC): " +
	"conditional writes through two regions can both succeed, so a lock on it is no lock; use a single-region table, " +
	"an MRSC global table, or set SingleWriterRegion if every client writes through one region")

// errTransactionsOnMRSC is the cause of the refusal, before any request,
// of a Store's transactions (Guard, GetMany, WriteMany, FenceMany: guarded
// writes and sets of keys) on a global table with multi-Region strong
// consistency, which does not support transactions; it matches
// dynalease.ErrInvalid. Fencing tokens work there instead of guarded
// writes.
var errTransactionsOnMRSC = errors.New("dynamodbstore: MRSC global tables do not support transactions: " +
	"guarded writes and sets of keys are not available; use fencing tokens")

// canDescribe reports whether client has DescribeTable.
func canDescribe(client StoreAPI) bool {
	_, ok := client.(DescribeAPI)
	return ok
}

// tableCheck is a Store's check of one of its tables, made once, before
// the first request that needs it, by one caller while the others wait
// (each on its own context).
type tableCheck struct {
	mu      sync.Mutex
	running chan struct{} // closed when the check under way ends; nil when none is
	done    bool
	err     error // a refusal, kept
	info    TableInfo
	skipped bool // Config.SkipTableCheck: nothing is checked
}

// skip marks the check done without describing the table.
func (c *tableCheck) skip() { c.done, c.skipped = true, true }

// run checks table once: the first caller describes it; a caller that
// comes while it does waits for it, or for its own ctx. A failure that
// waiting may fix is returned to the caller that met it, and the next
// call checks again; a refusal (refuse's answer) is kept.
func (c *tableCheck) run(ctx context.Context, describe func(context.Context) (TableInfo, error), refuse func(TableInfo) error) error {
	for {
		c.mu.Lock()
		if c.done {
			c.mu.Unlock()
			return c.err
		}
		if wait := c.running; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		running := make(chan struct{})
		c.running = running
		c.mu.Unlock()

		info, err := describe(ctx)
		c.mu.Lock()
		c.running = nil
		close(running)
		if err == nil {
			c.done, c.info, c.err = true, info, refuse(info)
			err = c.err
		}
		c.mu.Unlock()
		return err
	}
}

// result returns what the check found, and whether it was made.
func (c *tableCheck) result() (TableInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info, c.done && !c.skipped && c.err == nil
}

// checkTable checks one of the store's tables (see ready).
func (d *Store) checkTable(ctx context.Context, c *tableCheck, table string) error {
	return c.run(ctx, func(ctx context.Context) (TableInfo, error) {
		api := d.client.(DescribeAPI) // New refused a client without it
		dctx, cancel := d.bound(ctx)
		defer cancel()
		info, err := DescribeLockTable(dctx, api, table)
		if isAccessDenied(err) {
			err = fmt.Errorf("%w (the table check needs dynamodb:DescribeTable on %s: see docs/iam)", err, table)
		}
		return info, err
	}, func(info TableInfo) error {
		if info.Global() && !info.StronglyConsistent() && !d.singleWriter {
			return fmt.Errorf("%s: table %s: %w (replicas in %v) (%w)", d.Describe(), info.Table, errEventualGlobalTable, info.Regions, resourcelock.ErrPermanent)
		}
		return nil
	})
}

// ready checks the lock table, with one DescribeTable, the first time it
// is called (the fence table is checked at the first request to it; see
// readyFence). A global table with eventual consistency is refused unless
// Config.SingleWriterRegion, and the refusal kept; a failure that waiting
// may fix is returned, and the table checked again at the next call.
func (d *Store) ready(ctx context.Context) error {
	return d.checkTable(ctx, &d.lockCheck, d.table)
}

// readyFence checks the lock table and the fence table.
func (d *Store) readyFence(ctx context.Context) error {
	if err := d.ready(ctx); err != nil {
		return err
	}
	if d.fenceTable == "" {
		return nil
	}
	return d.checkTable(ctx, &d.fenceCheck, d.fenceTable)
}

// Tables checks the store's tables, if it has not yet, and returns what it
// found of them: the lock table, then the fence table when there is one.
// With Config.SkipTableCheck nothing is checked: Tables then returns no
// table and no error.
func (d *Store) Tables(ctx context.Context) ([]TableInfo, error) {
	err := d.readyFence(ctx)
	var out []TableInfo
	for _, c := range []*tableCheck{&d.lockCheck, &d.fenceCheck} {
		if info, ok := c.result(); ok {
			out = append(out, info)
		}
	}
	return out, err
}

// noTransactions refuses a transaction (errTransactionsOnMRSC, matching
// dynalease.ErrInvalid), naming what, when a table
// the transaction writes (the lock table, and with fence the fence table)
// is an MRSC global table, after the tables' check; the check's own error
// otherwise.
func (d *Store) noTransactions(ctx context.Context, what string, fence bool) error {
	checks := []*tableCheck{&d.lockCheck}
	if fence {
		if err := d.readyFence(ctx); err != nil {
			return err
		}
		checks = append(checks, &d.fenceCheck)
	} else if err := d.ready(ctx); err != nil {
		return err
	}
	for _, c := range checks {
		if info, ok := c.result(); ok && info.StronglyConsistent() {
			return fmt.Errorf("%s: %s: %w (%s) (%w)", d.Describe(), what, errTransactionsOnMRSC, info.Table, dynalease.ErrInvalid)
		}
	}
	return nil
}

// mrsc reports whether the lock table was found to be an MRSC global
// table.
func (d *Store) mrsc() bool {
	info, ok := d.lockCheck.result()
	return ok && info.StronglyConsistent()
}

// isAccessDenied reports whether err is DynamoDB's refusal for want of
// permission.
func isAccessDenied(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "AccessDeniedException"
}
