package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
)

// settings sizes one run.
type settings struct {
	Workers      int
	OpsPerWorker int
	MigrateShare float64
	// Think is the pause between the two writes of a migration (and the
	// two reads of a reader): it widens the window in which a read
	// without the lock would see a torn schema.
	Think   time.Duration
	Lease   time.Duration
	Refresh time.Duration
	RunID   string
}

// tables names a run's tables: the lock table, its fence table, and the
// schemas table keyed by the string attribute "id".
type tables struct {
	Locks, Fence, Schemas string
}

// The schema's items and their attributes.
const (
	attrID      = "id"
	attrVersion = "version" // N
	attrToken   = "token"   // N: the fencing token of the migration that wrote it
	itemColumns = "tenant-7/columns"
	itemIndexes = "tenant-7/indexes"
	lockKey     = "schema/tenant-7"
)

// report is what a run found.
type report struct {
	Reads, Migrations int64
	Torn, Newer       int64
	MostReaders       int64
	Version           int64
	Elapsed           time.Duration
}

// OK reports whether every read saw one version and nothing newer than
// its token.
func (r report) OK() bool { return r.Torn == 0 && r.Newer == 0 }

// run runs the workers and counts what their reads saw.
func run(ctx context.Context, db *dynamodb.Client, t tables, s settings) (report, error) {
	var rep report
	var readers atomic.Int64
	var mu sync.Mutex
	errs := make([]error, s.Workers)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range s.Workers {
		store, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: t.Locks, FenceTable: t.Fence})
		if err != nil {
			return rep, err
		}
		lc, err := lock.New(lock.Config{Store: store, Identity: fmt.Sprintf("worker-%d-%s", i, s.RunID), Fencing: true,
			LeaseDuration: s.Lease, HeartbeatPeriod: s.Lease / 5, RefreshPeriod: s.Refresh})
		if err != nil {
			return rep, err
		}
		defer lc.Close(context.WithoutCancel(ctx))
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		wg.Go(func() {
			for range s.OpsPerWorker {
				if rng.Float64() < s.MigrateShare {
					if errs[i] = migrate(ctx, db, t, lc, s.Think); errs[i] != nil {
						return
					}
					mu.Lock()
					rep.Migrations++
					mu.Unlock()
					continue
				}
				l, err := lc.AcquireShared(ctx, lockKey, lock.WithAdditionalWait(time.Minute))
				if err != nil {
					errs[i] = fmt.Errorf("read lock: %w", err)
					return
				}
				n := readers.Add(1)
				cols, idx, err := readSchema(ctx, db, t, s.Think)
				readers.Add(-1)
				if rerr := l.Release(context.WithoutCancel(ctx)); err == nil {
					err = rerr
				}
				if err != nil {
					errs[i] = err
					return
				}
				mu.Lock()
				rep.Reads++
				rep.MostReaders = max(rep.MostReaders, n)
				if cols.version != idx.version {
					rep.Torn++
				}
				if cols.token > l.Token() || idx.token > l.Token() {
					rep.Newer++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	cols, _, err := readSchema(ctx, db, t, 0)
	rep.Version = cols.version
	return rep, errors.Join(append(errs, err)...)
}

// migrate takes the schema's lock exclusively and moves both items to the
// next version, stamped with the lock's fencing token.
func migrate(ctx context.Context, db *dynamodb.Client, t tables, lc *lock.Client, think time.Duration) error {
	l, err := lc.Acquire(ctx, lockKey, lock.WithAdditionalWait(time.Minute))
	if err != nil {
		return fmt.Errorf("write lock: %w", err)
	}
	defer l.Release(context.WithoutCancel(ctx))
	cols, _, err := readSchema(ctx, db, t, 0)
	if err != nil {
		return err
	}
	next := item{version: cols.version + 1, token: l.Token()}
	if err := writeItem(ctx, db, t, itemColumns, next); err != nil {
		return err
	}
	time.Sleep(think)
	return writeItem(ctx, db, t, itemIndexes, next)
}

// item is one schema item as stored.
type item struct{ version, token int64 }

// readSchema reads the columns, pauses think, and reads the indexes; a
// missing item reads as version 0.
func readSchema(ctx context.Context, db *dynamodb.Client, t tables, think time.Duration) (cols, idx item, err error) {
	if cols, err = readItem(ctx, db, t, itemColumns); err != nil {
		return
	}
	time.Sleep(think)
	idx, err = readItem(ctx, db, t, itemIndexes)
	return
}

func readItem(ctx context.Context, db *dynamodb.Client, t tables, id string) (item, error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.Schemas), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		return item{}, err
	}
	var it item
	for name, dst := range map[string]*int64{attrVersion: &it.version, attrToken: &it.token} {
		if n, ok := out.Item[name].(*types.AttributeValueMemberN); ok {
			if *dst, err = strconv.ParseInt(n.Value, 10, 64); err != nil {
				return item{}, err
			}
		}
	}
	return it, nil
}

func writeItem(ctx context.Context, db *dynamodb.Client, t tables, id string, it item) error {
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(t.Schemas), Item: map[string]types.AttributeValue{
		attrID:      &types.AttributeValueMemberS{Value: id},
		attrVersion: &types.AttributeValueMemberN{Value: strconv.FormatInt(it.version, 10)},
		attrToken:   &types.AttributeValueMemberN{Value: strconv.FormatInt(it.token, 10)},
	}})
	return err
}
