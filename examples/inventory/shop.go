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

	"github.com/dynalease/dynalease/lock"
)

// settings sizes the runs.
type settings struct {
	Item      string // the stock item's id
	Stock     int64  // units in stock at the start of each run
	Buyers    int    // concurrent buyers
	Purchases int    // purchases each buyer tries
	MaxUnits  int64  // a purchase is of 1 to MaxUnits units
	// Think is the pause between reading the stock and writing it back:
	// the time a real shop spends on payment, fraud checks and so on. It
	// widens the window in which unserialized purchases overwrite each
	// other's stock.
	Think time.Duration
	// Lease, Heartbeat and Refresh configure each buyer's lock client in
	// the locked run.
	Lease     time.Duration
	Heartbeat time.Duration
	Refresh   time.Duration
	// RunID makes the owner names of the lock clients unique.
	RunID string
}

// tables names the lock table and the stock table (keyed by the string
// attribute "id").
type tables struct {
	Locks string
	Stock string
}

// Attribute names of a stock item.
const (
	attrID    = "id"
	attrStock = "stock" // N, units in stock
)

func lockKey(item string) string { return "item-" + item }

// result is the outcome of one run.
type result struct {
	Locked  bool
	Initial int64 // stock at the start
	Final   int64 // stock at the end, read back from the table
	Tried   int   // purchases tried
	Sales   int   // purchases that succeeded
	Sold    int64 // units those purchases sold
	Refused int   // purchases refused for want of stock
	// Lock statistics (locked run only).
	Acquisitions int
	Waits        int           // acquisitions that found the lock held and waited
	Waited       time.Duration // total time spent waiting
	LongestWait  time.Duration
	Elapsed      time.Duration
}

// Removed is how many units left the stock.
func (r result) Removed() int64 { return r.Initial - r.Final }

// Lost is how many sold units never left the stock: the lost updates.
func (r result) Lost() int64 { return r.Sold - r.Removed() }

// Oversold is how many more units were sold than there were.
func (r result) Oversold() int64 { return max(0, r.Sold-r.Initial) }

// Exact reports whether the stock is exactly the initial stock minus the
// units sold, never negative, with nothing oversold.
func (r result) Exact() bool {
	return r.Final == r.Initial-r.Sold && r.Final >= 0 && r.Sold <= r.Initial
}

// add merges one buyer's counts into r.
func (r *result) add(b result) {
	r.Tried += b.Tried
	r.Sales += b.Sales
	r.Sold += b.Sold
	r.Refused += b.Refused
	r.Acquisitions += b.Acquisitions
	r.Waits += b.Waits
	r.Waited += b.Waited
	r.LongestWait = max(r.LongestWait, b.LongestWait)
}

// shop keeps the stock of one item in a table.
type shop struct {
	db    *dynamodb.Client
	table string
	item  string
	think time.Duration
}

// purchase is the critical section: a naive read-subtract-write of the
// item's stock, a plain GetItem and then a plain PutItem with no condition,
// as code that loads a record, changes it in memory and saves it does. It
// sells units if the stock it read covers them and reports whether it did.
//
// held is the lock under which it runs, nil in the unlocked run. Today the
// lock only serializes purchases; purchase runs under its context and
// checks it before writing, which does not stop a holder that pauses
// between the check and the PutItem. A guarded version would replace the
// PutItem with one TransactWriteItems that writes the stock and checks the
// lock's row (or a fencing token) in the same transaction, so that a
// holder whose lock has passed to someone else cannot commit.
func (s *shop) purchase(ctx context.Context, held *lock.Lock, units int64) (bool, error) {
	stock, err := s.stock(ctx)
	if err != nil {
		return false, err
	}
	if stock < units {
		return false, nil
	}
	if err := sleep(ctx, s.think); err != nil {
		return false, err
	}
	if held != nil && !held.IsHeld() {
		return false, fmt.Errorf("the lock on %s ended before the sale was written: %w", s.item, held.Err())
	}
	if err := s.setStock(ctx, stock-units); err != nil {
		return false, err
	}
	return true, nil
}

// stock reads the item's stock with a strongly consistent read.
func (s *shop) stock(ctx context.Context) (int64, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: s.item}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("reading the stock of %s: %w", s.item, err)
	}
	n, ok := out.Item[attrStock].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("reading the stock of %s: no item, or no number in %q", s.item, attrStock)
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading the stock of %s: %w", s.item, err)
	}
	return v, nil
}

// setStock writes the item with the given stock, unconditionally.
func (s *shop) setStock(ctx context.Context, stock int64) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrID:    &types.AttributeValueMemberS{Value: s.item},
			attrStock: &types.AttributeValueMemberN{Value: strconv.FormatInt(stock, 10)},
		},
	})
	if err != nil {
		return fmt.Errorf("writing the stock of %s: %w", s.item, err)
	}
	return nil
}

// buyFunc makes one purchase of units on behalf of a buyer, counting it
// in the buyer's result.
type buyFunc func(ctx context.Context, units int64, r *result) error

// runUnlocked sells to the buyers with no lock at all.
func runUnlocked(ctx context.Context, sh *shop, s settings) (result, error) {
	buyers := make([]buyFunc, s.Buyers)
	for i := range buyers {
		buyers[i] = func(ctx context.Context, units int64, r *result) error {
			ok, err := sh.purchase(ctx, nil, units)
			if err == nil {
				count(r, ok, units)
			}
			return err
		}
	}
	return sell(ctx, sh, s, false, buyers)
}

// runLocked sells to the buyers, each purchase under the item's lock. Every
// buyer has a lock client of its own, a separate owner as separate
// processes would be.
func runLocked(ctx context.Context, sh *shop, locks string, s settings) (result, error) {
	buyers := make([]buyFunc, s.Buyers)
	for i := range buyers {
		c, err := lock.New(sh.db, locks,
			lock.WithOwnerName(fmt.Sprintf("buyer-%d-%s", i+1, s.RunID)),
			lock.WithLeaseDuration(s.Lease),
			lock.WithHeartbeatPeriod(s.Heartbeat),
			lock.WithRefreshPeriod(s.Refresh),
		)
		if err != nil {
			return result{}, err
		}
		defer c.Close(context.WithoutCancel(ctx))
		buyers[i] = func(ctx context.Context, units int64, r *result) error {
			l, err := acquire(ctx, c, lockKey(sh.item), r)
			if err != nil {
				return err
			}
			lctx, cancel := l.Context(ctx)
			ok, err := sh.purchase(lctx, l, units)
			cancel()
			if err == nil {
				count(r, ok, units)
			}
			// A lock lost during the purchase reports that here: the
			// purchase may then have raced another, and the run stops.
			if rerr := l.Release(ctx); rerr != nil && err == nil {
				err = fmt.Errorf("releasing the lock on %s: %w", sh.item, rerr)
			}
			return err
		}
	}
	return sell(ctx, sh, s, true, buyers)
}

func count(r *result, sold bool, units int64) {
	r.Tried++
	if sold {
		r.Sales++
		r.Sold += units
	} else {
		r.Refused++
	}
}

// acquire takes the lock on key and counts the acquisition in r. It tries
// without waiting first, only to learn whether the lock is contended, then
// waits with Acquire; an Acquire that gives up with ErrLocked (the lock
// stayed held for longer than its holder's lease, by one holder or by a
// succession of others that won the race for it) is repeated.
//
// The lock is not fair: a buyer that releases the lock and asks for it
// again at once usually wins it before the waiters, who poll only every
// refresh period, so few acquisitions wait but those that do wait long.
func acquire(ctx context.Context, c *lock.Client, key string, r *result) (*lock.Lock, error) {
	start := time.Now()
	l, err := c.TryAcquire(ctx, key)
	if errors.Is(err, lock.ErrLocked) {
		r.Waits++
		for {
			l, err = c.Acquire(ctx, key)
			if !errors.Is(err, lock.ErrLocked) {
				break
			}
		}
		d := time.Since(start)
		r.Waited += d
		r.LongestWait = max(r.LongestWait, d)
	}
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", key, err)
	}
	r.Acquisitions++
	return l, nil
}

// sell puts the initial stock in the table, lets every buyer try its
// purchases concurrently, and reads the final stock back.
func sell(ctx context.Context, sh *shop, s settings, locked bool, buyers []buyFunc) (result, error) {
	res := result{Locked: locked, Initial: s.Stock}
	if err := sh.setStock(ctx, s.Stock); err != nil {
		return res, err
	}
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for i, buy := range buyers {
		wg.Go(func() {
			var mine result
			defer func() {
				mu.Lock()
				res.add(mine)
				mu.Unlock()
			}()
			for range s.Purchases {
				if err := buy(ctx, 1+rand.Int64N(s.MaxUnits), &mine); err != nil {
					cancel(fmt.Errorf("buyer %d: %w", i+1, err))
					return
				}
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	var err error
	res.Final, err = sh.stock(ctx)
	return res, err
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
