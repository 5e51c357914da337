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
	// PauseLease is the lease of every lock client in the paused-worker
	// scenarios, short so that the stalled worker's lock runs out in
	// real time within the demonstration; their heartbeat period is
	// PauseLease/8.
	PauseLease time.Duration
	// Others and OtherPurchases size the buyers that sell while the
	// paused worker stalls.
	Others         int
	OtherPurchases int
	// RunID makes the owner names of the lock clients unique.
	RunID string
}

// tables names the lock table, the fence table that keeps the fencing
// generations of the locks (both keyed by the string attribute "key", made
// by dynamodbstore.CreateTable), and the stock table (keyed by the string
// attribute "id").
type tables struct {
	Locks string
	Fence string
	Stock string
}

// Attribute names of a stock item.
const (
	attrID    = "id"
	attrStock = "stock" // N, units in stock
	attrFence = "fence" // N, the largest fencing token that wrote the stock
)

// writeMode is how a purchase writes the new stock back.
type writeMode int

const (
	// plainWrite is a PutItem with no condition: whatever the writer
	// believes about its lock, the write lands.
	plainWrite writeMode = iota
	// guardedWrite is lock.Guard: an Update of the stock and a check that
	// the lock row still shows the writer's acquisition, in one
	// TransactWriteItems. DynamoDB refuses the whole transaction when the
	// lock has passed to someone else.
	guardedWrite
	// fencedWrite is an UpdateItem conditioned on the lock's fencing
	// token (dynamodbstore.FenceWith): the stock item remembers the largest token
	// that wrote it and refuses a smaller one. No transaction and no read
	// of the lock row; it needs every writer of the item to fence.
	//
	// Fencing only the write is not enough for a read-subtract-write: a
	// stale holder's write that lands after a newer holder's read but
	// before its write passes the fence (the newer token is not on the
	// item yet) and is then overwritten by the newer holder's write,
	// computed from a read that never saw it; that sale is lost. So a
	// purchase first raises the fence to its token, before it reads: from
	// then on every older holder's write is refused.
	fencedWrite
)

func (m writeMode) String() string {
	switch m {
	case plainWrite:
		return "plain write"
	case guardedWrite:
		return "guarded write"
	case fencedWrite:
		return "fenced write"
	}
	return fmt.Sprintf("writeMode(%d)", int(m))
}

// errFenced is returned by a fenced write that the stock item refused: a
// holder with a newer fencing token has raised its fence since.
var errFenced = errors.New("refused by the item's fence: a holder with a newer fencing token has raised it")

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
	// locks is the lock table's store, whose guarded writes (Writes)
	// commit a purchase with a check of the item's lock row; nil for a
	// shop that only reads the stock.
	locks *dynamodbstore.Store
	// mode is how a purchase under a lock writes the stock; a purchase
	// without a lock always writes plainly.
	mode writeMode
	// pause, when set, is called between the read and the write of a
	// purchase with the stock read: the paused worker stalls in it.
	pause func(ctx context.Context, read int64) error
}

// newShop returns the shop of item in t's stock table, whose guarded
// writes check the lock rows of t's lock table.
func newShop(db *dynamodb.Client, t tables, item string, think time.Duration) (*shop, error) {
	locks, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: t.Locks})
	if err != nil {
		return nil, err
	}
	return &shop{db: db, table: t.Stock, item: item, think: think, locks: locks}, nil
}

// with returns a copy of the shop that writes with mode.
func (s *shop) with(mode writeMode) *shop {
	c := *s
	c.mode = mode
	return &c
}

// purchase is the critical section: a read-subtract-write of the item's
// stock, a plain GetItem and then a write of the stock read minus the units
// sold, as code that loads a record, changes it in memory and saves it
// does. It sells units if the stock it read covers them and reports
// whether it did.
//
// held is the lock under which it runs, nil in the unlocked run. purchase
// runs under the lock's context and checks IsHeld before writing, but no
// check made by the holder can stop a holder that pauses between the check
// and its write landing at DynamoDB. How the write is made (s.mode) decides
// whether such a holder can still commit: a plain PutItem lands whatever
// happened meanwhile; a guarded write (lock.Guard) commits only if the
// lock row, read by DynamoDB inside the same transaction, still shows this
// acquisition; a fenced write only if no holder with a newer fencing token
// has raised the item's fence. A refused write applies nothing and purchase
// returns its error: the sale is not made.
func (s *shop) purchase(ctx context.Context, held *lock.Lock, units int64) (bool, error) {
	if held != nil && s.mode == fencedWrite {
		if err := s.raiseFence(ctx, held); err != nil {
			return false, err
		}
	}
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
	if s.pause != nil {
		if err := s.pause(ctx, stock); err != nil {
			return false, err
		}
	}
	if held != nil && !held.IsHeld() {
		return false, fmt.Errorf("the lock on %s ended before the sale was written: %w", s.item, held.Err())
	}
	switch {
	case held == nil || s.mode == plainWrite:
		err = s.setStock(ctx, stock-units)
	case s.mode == guardedWrite:
		err = s.guardedSetStock(ctx, held, stock-units)
	case s.mode == fencedWrite:
		err = s.fencedSetStock(ctx, held, stock-units)
	default:
		err = fmt.Errorf("unknown %v", s.mode)
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// stock reads the item's stock with a strongly consistent read.
func (s *shop) stock(ctx context.Context) (int64, error) {
	return s.number(ctx, attrStock)
}

// fence reads the largest fencing token that has written the item, 0 when
// none has.
func (s *shop) fence(ctx context.Context) (int64, error) {
	n, err := s.number(ctx, attrFence)
	if errors.Is(err, errNoNumber) {
		return 0, nil
	}
	return n, err
}

var errNoNumber = errors.New("no item, or no number in the attribute")

// number reads the number attribute attr of the item with a strongly
// consistent read.
func (s *shop) number(ctx context.Context, attr string) (int64, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.key(),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("reading the %s of %s: %w", attr, s.item, err)
	}
	n, ok := out.Item[attr].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("reading the %s of %s: %w %q", attr, s.item, errNoNumber, attr)
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading the %s of %s: %w", attr, s.item, err)
	}
	return v, nil
}

// setStock writes the item with the given stock, unconditionally. The
// PutItem replaces the whole item, fence included: the stock is set up at
// the start of every run this way.
func (s *shop) setStock(ctx context.Context, stock int64) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrID:    &types.AttributeValueMemberS{Value: s.item},
			attrStock: number(stock),
		},
	})
	if err != nil {
		return fmt.Errorf("writing the stock of %s: %w", s.item, err)
	}
	return nil
}

// key is the stock item's key.
func (s *shop) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: s.item}}
}

// guardedSetStock sets the item's stock under held with Lock.Guard: one
// transaction of this Update and a check of the lock row. An error
// matching dynalease.ErrLost means the lock had passed to someone else and
// nothing was written.
func (s *shop) guardedSetStock(ctx context.Context, held *lock.Lock, stock int64) error {
	err := held.Guard(ctx, s.locks.Writes(types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       s.key(),
		UpdateExpression:          aws.String("SET #stock = :stock"),
		ExpressionAttributeNames:  map[string]string{"#stock": attrStock},
		ExpressionAttributeValues: map[string]types.AttributeValue{":stock": number(stock)},
	}}))
	if err != nil {
		return fmt.Errorf("guarded write of the stock of %s: %w", s.item, err)
	}
	return nil
}

// raiseFence raises the item's fence to held's fencing token, unless a
// newer token has raised it already (then it returns an error matching
// errFenced).
func (s *shop) raiseFence(ctx context.Context, held *lock.Lock) error {
	return s.fenced(ctx, held, "raising the fence of", "", nil, nil)
}

// fencedSetStock sets the item's stock with an UpdateItem fenced by held's
// fencing token: admitted only if the item's fence is missing or not
// larger than the token. It returns an error matching errFenced when the
// item refused the token.
func (s *shop) fencedSetStock(ctx context.Context, held *lock.Lock, stock int64) error {
	return s.fenced(ctx, held, "fenced write of the stock of", "#stock = :stock, ",
		map[string]string{"#stock": attrStock},
		map[string]types.AttributeValue{":stock": number(stock)})
}

// fenced sends an UpdateItem of the item that SETs set (a list of
// assignments ending in ", ", or empty) and the fence to held's token, if
// the item's fence is missing or not larger than the token. what names the
// operation in errors.
func (s *shop) fenced(ctx context.Context, held *lock.Lock, what, set string, names map[string]string, values map[string]types.AttributeValue) error {
	f, err := dynamodbstore.FenceWith(attrFence, held.Token())
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, s.item, err)
	}
	names, values = f.Merge(names, values)
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.key(),
		UpdateExpression:          aws.String("SET " + set + f.Set),
		ConditionExpression:       aws.String(f.Condition),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var refused *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("%s %s with token %d: %w", what, s.item, held.Token(), errFenced)
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, s.item, err)
	}
	return nil
}

func number(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
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
	return sell(ctx, sh, s.Stock, s.Purchases, s.MaxUnits, false, buyers)
}

// runLocked sells to the buyers, each purchase under the item's lock and
// written as sh.mode says. Every buyer has a lock client of its own, a
// separate owner as separate processes would be; name tells the runs'
// owners apart.
func runLocked(ctx context.Context, sh *shop, t tables, s settings, name string) (result, error) {
	buyers := make([]buyFunc, s.Buyers)
	for i := range buyers {
		c, err := newLockClient(sh.db, t, fmt.Sprintf("%s-buyer-%d-%s", name, i+1, s.RunID), s.Lease, s.Heartbeat, s.Refresh)
		if err != nil {
			return result{}, err
		}
		defer c.Close(context.WithoutCancel(ctx))
		buyers[i] = lockedBuyer(sh, c)
	}
	return sell(ctx, sh, s.Stock, s.Purchases, s.MaxUnits, true, buyers)
}

// newLockClient returns a buyer's lock client. Every client has fencing,
// so that every acquisition has a token for the fenced writes; it costs a
// request to the fence table only when a row is new to fencing.
func newLockClient(db *dynamodb.Client, t tables, owner string, lease, heartbeat, refresh time.Duration) (*lock.Client, error) {
	return newLockClientWith(db, lock.Config{}, t, owner, lease, heartbeat, refresh)
}

// newLockClientWith is newLockClient with cfg's other fields (a clock,
// say) kept.
func newLockClientWith(db *dynamodb.Client, cfg lock.Config, t tables, owner string, lease, heartbeat, refresh time.Duration) (*lock.Client, error) {
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: t.Locks, FenceTable: t.Fence})
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Identity = store, owner
	cfg.LeaseDuration, cfg.HeartbeatPeriod, cfg.RefreshPeriod = lease, heartbeat, refresh
	cfg.Fencing = true
	return lock.New(cfg)
}

// lockedBuyer returns a buyer that makes each purchase under the item's
// lock, taken with c.
func lockedBuyer(sh *shop, c *lock.Client) buyFunc {
	return func(ctx context.Context, units int64, r *result) error {
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

// sell puts the initial stock in the table and sells it: see runBuyers.
func sell(ctx context.Context, sh *shop, stock int64, purchases int, maxUnits int64, locked bool, buyers []buyFunc) (result, error) {
	if err := sh.setStock(ctx, stock); err != nil {
		return result{Locked: locked, Initial: stock}, err
	}
	return runBuyers(ctx, sh, stock, purchases, maxUnits, locked, buyers)
}

// runBuyers lets every buyer try its purchases of 1 to maxUnits units
// concurrently, and reads the final stock back.
func runBuyers(ctx context.Context, sh *shop, stock int64, purchases int, maxUnits int64, locked bool, buyers []buyFunc) (result, error) {
	res := result{Locked: locked, Initial: stock}
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
			for range purchases {
				if err := buy(ctx, 1+rand.Int64N(maxUnits), &mine); err != nil {
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
