package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
)

// settings sizes one run.
type settings struct {
	Customers        int
	Workers          int
	ChangesPerWorker int
	// MaxDeposit bounds one deposit, in cents.
	MaxDeposit int64
	// Think is a pause between reading a customer's records and writing
	// them back: the time a real service spends deciding on the change. It
	// widens the window in which unserialized changes would overwrite
	// each other.
	Think time.Duration
	// Lease, Heartbeat and Refresh configure each worker's lock client.
	Lease     time.Duration
	Heartbeat time.Duration
	Refresh   time.Duration
	// RunID makes the owner names of this run's lock clients unique.
	RunID string
}

// tables names the three tables of a run: the lock table and the two
// tables of customer records, each keyed by the string attribute "id".
type tables struct {
	Locks    string
	Accounts string
	Profiles string
}

// Attribute names of the customer records.
const (
	attrID      = "id"
	attrBalance = "balance"      // accounts: N, cents
	attrChanges = "changes"      // profiles: N, changes applied
	attrLastBy  = "lastChangeBy" // profiles: S, the worker of the last change
)

// customerID returns the id of customer i (counting from 0) in the record
// tables; lockKey returns the lock key that guards that customer.
func customerID(i int) string  { return fmt.Sprintf("%03d", i+1) }
func lockKey(id string) string { return "customer-" + id }

// workerStats is what one worker did; only its own goroutine writes it
// until the run is over.
type workerStats struct {
	Name         string
	Changes      int           // changes applied (both records written)
	Acquisitions int           // locks acquired
	Waits        int           // acquisitions that found the lock held and waited
	Retries      int           // Acquire calls that gave up with ErrLocked and were repeated
	Waited       time.Duration // total time spent waiting
	LongestWait  time.Duration
	// Deposits and Count are this worker's ledger: cents deposited and
	// changes applied, per customer id.
	Deposits map[string]int64
	Count    map[string]int
}

// customerResult compares what the tables hold for one customer with the
// ledgers of all workers.
type customerResult struct {
	ID           string
	Balance      int64 // from the accounts table
	Deposits     int64 // sum of the ledgers
	Counter      int64 // from the profiles table
	Changes      int   // sum of the ledgers
	Acquisitions int64 // acquisitions recorded in the customer's lock row
}

// OK reports whether the customer's records match the ledgers.
func (r customerResult) OK() bool {
	return r.Balance == r.Deposits && r.Counter == int64(r.Changes)
}

// report is the outcome of a run.
type report struct {
	Settings  settings
	Customers []customerResult
	Workers   []workerStats
	Elapsed   time.Duration
}

// OK reports whether every customer's records match the ledgers.
func (r report) OK() bool {
	for _, c := range r.Customers {
		if !c.OK() {
			return false
		}
	}
	return len(r.Customers) > 0
}

// bank reads and writes the customer records.
type bank struct {
	db *dynamodb.Client
	t  tables
	// locks is the lock table's store, whose guarded writes (Writes)
	// commit a deposit with a check of the customer's lock row.
	locks *dynamodbstore.Store
}

// run opens the customers' records, lets the workers apply their changes
// concurrently, and then compares the tables with the workers' ledgers.
// The tables must exist; the record tables should be empty. It returns an
// error when the run could not be completed, and otherwise a report that
// says whether the invariant held.
func run(ctx context.Context, db *dynamodb.Client, t tables, s settings) (report, error) {
	locks, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: t.Locks})
	if err != nil {
		return report{}, err
	}
	b := &bank{db: db, t: t, locks: locks}
	rep := report{Settings: s}
	ids := make([]string, s.Customers)
	for i := range ids {
		ids[i] = customerID(i)
		if err := b.open(ctx, ids[i]); err != nil {
			return rep, err
		}
	}

	// Each worker has a lock client of its own, as separate processes
	// would: a distinct owner, its own heartbeats, and waits that poll
	// DynamoDB rather than queue inside one process.
	clients := make([]*lock.Client, s.Workers)
	for i := range clients {
		store, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: t.Locks})
		if err != nil {
			return rep, err
		}
		c, err := lock.New(lock.Config{Store: store, Identity: fmt.Sprintf("worker-%d-%s", i+1, s.RunID), LeaseDuration: s.Lease, HeartbeatPeriod: s.Heartbeat, RefreshPeriod: s.Refresh})
		if err != nil {
			return rep, err
		}
		clients[i] = c
	}
	defer func() {
		for _, c := range clients {
			_ = c.Close(context.WithoutCancel(ctx))
		}
	}()

	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rep.Workers = make([]workerStats, s.Workers)
	var wg sync.WaitGroup
	for i := range s.Workers {
		w := &rep.Workers[i]
		*w = workerStats{
			Name:     fmt.Sprintf("worker-%d", i+1),
			Deposits: map[string]int64{},
			Count:    map[string]int{},
		}
		wg.Go(func() {
			if err := b.work(ctx, clients[i], w, ids, s); err != nil {
				cancel(fmt.Errorf("%s: %w", w.Name, err))
			}
		})
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return rep, err
	}

	for _, id := range ids {
		r := customerResult{ID: id}
		for _, w := range rep.Workers {
			r.Deposits += w.Deposits[id]
			r.Changes += w.Count[id]
		}
		var err error
		if r.Balance, err = b.number(ctx, t.Accounts, id, attrBalance); err != nil {
			return rep, err
		}
		if r.Counter, err = b.number(ctx, t.Profiles, id, attrChanges); err != nil {
			return rep, err
		}
		info, err := clients[0].Get(ctx, lockKey(id))
		if err != nil {
			return rep, fmt.Errorf("reading the lock of customer %s: %w", id, err)
		}
		r.Acquisitions = info.Acquisitions
		rep.Customers = append(rep.Customers, r)
	}
	return rep, nil
}

// work applies the worker's changes one after the other, each a deposit
// of a random amount to a random customer.
func (b *bank) work(ctx context.Context, c *lock.Client, w *workerStats, ids []string, s settings) error {
	for range s.ChangesPerWorker {
		id := ids[rand.IntN(len(ids))]
		amount := 1 + rand.Int64N(s.MaxDeposit)
		l, err := acquire(ctx, c, lockKey(id), w)
		if err != nil {
			return err
		}
		err = b.deposit(ctx, l, id, amount, w.Name, s.Think)
		if err == nil {
			w.Deposits[id] += amount
			w.Count[id]++
			w.Changes++
		}
		// Release even after a failed change. A lock lost during the
		// change reports that here too: the change may then have raced
		// another one, and the run stops.
		if rerr := l.Release(ctx); rerr != nil && err == nil {
			err = fmt.Errorf("releasing the lock of customer %s: %w", id, rerr)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// acquire takes the lock on key and counts the acquisition in w. It first
// tries without waiting, only to learn whether the lock is contended (a
// TryAcquire that fails has noted the holder's record version, so the
// Acquire that follows loses nothing by it); if someone else holds the lock
// it waits for it with Acquire. Acquire gives up with ErrLocked when the
// lock stays held for longer than its holder's lease (here a holder that
// stays alive but keeps the lock, or a waiter that keeps losing the race
// for a released lock to others); that is counted as a retry and waited
// for again.
//
// The lock is not fair: a worker that releases a lock and asks for it
// again at once usually wins it before the waiters, who poll only every
// refresh period, so a few waits last many times the lock's hold time.
func acquire(ctx context.Context, c *lock.Client, key string, w *workerStats) (*lock.Lock, error) {
	start := time.Now()
	l, err := c.TryAcquire(ctx, key)
	if errors.Is(err, lock.ErrLocked) {
		w.Waits++
		for {
			l, err = c.Acquire(ctx, key)
			if !errors.Is(err, lock.ErrLocked) {
				break
			}
			w.Retries++
		}
		d := time.Since(start)
		w.Waited += d
		w.LongestWait = max(w.LongestWait, d)
	}
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", key, err)
	}
	w.Acquisitions++
	return l, nil
}

// deposit is the critical section: a read-modify-write of both of the
// customer's records, which the lock l on the customer serializes with
// every other change to that customer. Its reads run under the lock's
// context, so they are cancelled if the lock is lost; its two writes are
// one guarded write (Lock.Guard): a single DynamoDB transaction that also
// checks the lock row still shows this acquisition. A worker that paused
// after its reads (GC, SIGSTOP) and lost the lock meanwhile therefore
// writes nothing, where checking IsHeld before plain writes could not stop
// it.
func (b *bank) deposit(ctx context.Context, l *lock.Lock, id string, amount int64, worker string, think time.Duration) error {
	ctx, cancel := l.Context(ctx)
	defer cancel()

	balance, err := b.number(ctx, b.t.Accounts, id, attrBalance)
	if err != nil {
		return err
	}
	changes, err := b.number(ctx, b.t.Profiles, id, attrChanges)
	if err != nil {
		return err
	}
	if err := sleep(ctx, think); err != nil {
		return err
	}
	err = l.Guard(ctx, b.locks.Writes(
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(b.t.Accounts), Item: map[string]types.AttributeValue{
			attrID:      str(id),
			attrBalance: num(balance + amount),
		}}},
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(b.t.Profiles), Item: map[string]types.AttributeValue{
			attrID:      str(id),
			attrChanges: num(changes + 1),
			attrLastBy:  str(worker),
		}}},
	))
	if err != nil {
		return fmt.Errorf("changing customer %s: %w", id, err)
	}
	return nil
}

// open writes a customer's records with a zero balance and no changes.
func (b *bank) open(ctx context.Context, id string) error {
	if err := b.put(ctx, b.t.Accounts, map[string]types.AttributeValue{
		attrID: str(id), attrBalance: num(0),
	}); err != nil {
		return err
	}
	return b.put(ctx, b.t.Profiles, map[string]types.AttributeValue{
		attrID: str(id), attrChanges: num(0),
	})
}

// number reads the numeric attribute attr of the record id in table, with
// a strongly consistent read.
func (b *bank) number(ctx context.Context, table, id, attr string) (int64, error) {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{attrID: str(id)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("reading %s/%s: %w", table, id, err)
	}
	if out.Item == nil {
		return 0, fmt.Errorf("reading %s/%s: no such record", table, id)
	}
	n, ok := out.Item[attr].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("reading %s/%s: %s is missing or not a number", table, id, attr)
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading %s/%s: %s: %w", table, id, attr, err)
	}
	return v, nil
}

// put writes a whole record, unconditionally.
func (b *bank) put(ctx context.Context, table string, item map[string]types.AttributeValue) error {
	_, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	if err != nil {
		return fmt.Errorf("writing %s: %w", table, err)
	}
	return nil
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
