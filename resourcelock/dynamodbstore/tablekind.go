package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/resourcelock"
)

// DescribeAPI is the part of the DynamoDB client that the table check
// uses. *dynamodb.Client satisfies it; a client without it skips the
// check.
type DescribeAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// TableInfo is what DescribeTable says of a table that matters to locks.
type TableInfo struct {
	Table        string
	PartitionKey string
	SortKey      string // empty without one
	// Regions are the regions of the table's replicas, other than the
	// one the client talks to; empty for a table that is not global.
	Regions []string
	// Witnesses are the regions of an MRSC table's witnesses.
	Witnesses []string
	// Consistency is the global table's multi-Region consistency:
	// "EVENTUAL" (MREC) or "STRONG" (MRSC); empty when not global.
	Consistency string
}

// Global reports whether the table has replicas in other regions.
func (t TableInfo) Global() bool { return len(t.Regions) > 0 || len(t.Witnesses) > 0 }

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
			info.PartitionKey = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			info.SortKey = aws.ToString(k.AttributeName)
		}
	}
	for _, r := range d.Replicas {
		info.Regions = append(info.Regions, aws.ToString(r.RegionName))
	}
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

// ErrEventualGlobalTable is returned (matching resourcelock.ErrPermanent)
// by every request of a Store whose lock or fence table is a global table
// with multi-Region eventual consistency (MREC), unless
// Config.SingleWriterRegion says that every client writes through one
// region: DynamoDB evaluates a conditional write against the item in the
// region it is sent to, so two clients writing through two regions can
// both acquire one lock, and a fencing generation can go backwards.
var ErrEventualGlobalTable = errors.New("dynamodbstore: the table is a global table with multi-Region eventual consistency (MREC): " +
	"conditional writes through two regions can both succeed, so a lock on it is no lock; use a single-region table, " +
	"an MRSC global table, or set SingleWriterRegion if every client writes through one region")

// ErrTransactionsOnMRSC is returned, before any request, by a Store's
// transactions (Guard, GetMany, WriteMany, FenceMany: guarded writes and
// sets of keys) on a global table with multi-Region strong consistency,
// which does not support transactions. Fencing tokens work there instead
// of guarded writes.
var ErrTransactionsOnMRSC = errors.New("dynamodbstore: MRSC global tables do not support transactions: " +
	"guarded writes and sets of keys are not available; use fencing tokens")

// errNoDescribe is a client's answer to DescribeTable when it has none.
var errNoDescribe = errors.New("dynamodbstore: the client cannot describe tables")

// tableCheck is a Store's check of its tables, made once, before its first
// request.
type tableCheck struct {
	mu    sync.Mutex
	done  bool
	err   error // a refusal, kept
	mrsc  bool  // the lock table is an MRSC global table
	infos []TableInfo
}

// ready checks the store's tables with one DescribeTable each, the first
// time it is called; a failure that waiting may fix is returned and the
// check is made again next time. A refusal is kept.
func (d *Store) ready(ctx context.Context) error {
	c := &d.check
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.err
	}
	api, ok := d.client.(DescribeAPI)
	if !ok {
		c.done = true
		return nil
	}
	var infos []TableInfo
	for _, table := range []string{d.table, d.fenceTable} {
		if table == "" {
			continue
		}
		dctx, cancel := d.bound(ctx)
		info, err := DescribeLockTable(dctx, api, table)
		cancel()
		if errors.Is(err, errNoDescribe) {
			c.done = true // a client that cannot describe tables: no check
			return nil
		}
		if err != nil {
			return err
		}
		infos = append(infos, info)
	}
	c.done, c.infos = true, infos
	for _, info := range infos {
		if info.Global() && !info.StronglyConsistent() && !d.singleWriter {
			c.err = fmt.Errorf("%s: table %s: %w (replicas in %v) (%w)", d.Describe(), info.Table, ErrEventualGlobalTable, info.Regions, resourcelock.ErrPermanent)
			return c.err
		}
	}
	c.mrsc = infos[0].StronglyConsistent()
	return nil
}

// Tables returns what the check found of the store's tables (the lock
// table, then the fence table), checking them first if it has not yet.
func (d *Store) Tables(ctx context.Context) ([]TableInfo, error) {
	err := d.ready(ctx)
	d.check.mu.Lock()
	defer d.check.mu.Unlock()
	return slices.Clone(d.check.infos), err
}

// noTransactions returns ErrTransactionsOnMRSC, naming what, on an MRSC
// table, after the table check; the check's own error otherwise.
func (d *Store) noTransactions(ctx context.Context, what string) error {
	if err := d.ready(ctx); err != nil {
		return err
	}
	d.check.mu.Lock()
	mrsc := d.check.mrsc
	d.check.mu.Unlock()
	if mrsc {
		return fmt.Errorf("%s: %s: %w (%w)", d.Describe(), what, ErrTransactionsOnMRSC, resourcelock.ErrPermanent)
	}
	return nil
}
