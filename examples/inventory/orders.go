package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
)

// Orders of several items: each order takes the locks on all its items at
// once (Client.AcquireSet: one transaction that takes every key or none),
// reads every item's stock, and writes every item's new stock in one
// guarded write (Lock.Guard: the stock updates and a check of every lock
// row, one transaction). Buyers name their items in random orders: taken
// one lock after another, two orders over the same items in opposite
// orders could deadlock; taken as a set, they cannot. An order is refused
// whole when any of its items is short.

// orderSettings sizes the orders run.
type orderSettings struct {
	Items  []string // the items' ids
	Stock  int64    // each item's stock at the start
	Buyers int
	Orders int // orders each buyer places
	// PerOrder and MaxUnits: an order is of 2 to PerOrder distinct items,
	// 1 to MaxUnits units of each.
	PerOrder  int
	MaxUnits  int64
	Think     time.Duration
	Lease     time.Duration
	Heartbeat time.Duration
	Refresh   time.Duration
	RunID     string
}

// orderResult is the outcome of the orders run.
type orderResult struct {
	Initial  map[string]int64
	Final    map[string]int64
	Sold     map[string]int64 // units sold of each item by the orders placed
	Placed   int
	Refused  int
	Elapsed  time.Duration
	MostKeys int // the most items one order locked
}

// Exact reports whether every item's stock fell by exactly the units sold
// of it, and none went below zero.
func (r orderResult) Exact() bool {
	for item, initial := range r.Initial {
		if initial-r.Final[item] != r.Sold[item] || r.Final[item] < 0 {
			return false
		}
	}
	return true
}

// runOrders sets every item's stock and lets the buyers place their orders
// concurrently, each buyer with a lock client of its own.
func runOrders(ctx context.Context, db *dynamodb.Client, t tables, s orderSettings) (orderResult, error) {
	res := orderResult{Initial: map[string]int64{}, Final: map[string]int64{}, Sold: map[string]int64{}}
	for _, item := range s.Items {
		sh := &shop{db: db, table: t.Stock, item: item}
		if err := sh.setStock(ctx, s.Stock); err != nil {
			return res, err
		}
		res.Initial[item] = s.Stock
	}
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for i := range s.Buyers {
		// No fencing: a set has no fencing token; the guarded write is
		// what keeps a paused holder's stale write out.
		store, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: t.Locks})
		if err != nil {
			return res, err
		}
		c, err := lock.New(lock.Config{Store: store, Identity: fmt.Sprintf("orders-buyer-%d-%s", i+1, s.RunID),
			LeaseDuration: s.Lease, HeartbeatPeriod: s.Heartbeat, RefreshPeriod: s.Refresh})
		if err != nil {
			return res, err
		}
		defer c.Close(context.WithoutCancel(ctx))
		wg.Go(func() {
			for range s.Orders {
				order := randomOrder(s)
				placed, err := placeOrder(ctx, db, t, store, c, order, s.Think)
				if err != nil {
					cancel(fmt.Errorf("buyer %d: %w", i+1, err))
					return
				}
				mu.Lock()
				res.MostKeys = max(res.MostKeys, len(order))
				if placed {
					res.Placed++
					for item, units := range order {
						res.Sold[item] += units
					}
				} else {
					res.Refused++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	for _, item := range s.Items {
		n, err := (&shop{db: db, table: t.Stock, item: item}).stock(ctx)
		if err != nil {
			return res, err
		}
		res.Final[item] = n
	}
	return res, nil
}

// randomOrder picks 2 to PerOrder distinct items, 1 to MaxUnits of each.
func randomOrder(s orderSettings) map[string]int64 {
	n := 2 + rand.IntN(max(1, min(s.PerOrder, len(s.Items))-1))
	order := map[string]int64{}
	for _, i := range rand.Perm(len(s.Items))[:n] {
		order[s.Items[i]] = 1 + rand.Int64N(s.MaxUnits)
	}
	return order
}

// placeOrder locks every item of the order at once, reads their stock and,
// when every item covers its units, writes all the new stock in one
// guarded write. It reports whether the order was placed.
func placeOrder(ctx context.Context, db *dynamodb.Client, t tables, store *dynamodbstore.Store, c *lock.Client, order map[string]int64, think time.Duration) (bool, error) {
	keys := make([]string, 0, len(order))
	for item := range order {
		keys = append(keys, lockKey(item)) // in the map's random order
	}
	var l *lock.Lock
	var err error
	for {
		l, err = c.AcquireSet(ctx, keys)
		if !errors.Is(err, lock.ErrLocked) {
			break // ErrLocked: held for longer than a lease by others; ask again
		}
	}
	if err != nil {
		return false, fmt.Errorf("locking %v: %w", keys, err)
	}
	defer l.Release(context.WithoutCancel(ctx))
	stock := map[string]int64{}
	for item, units := range order {
		n, err := (&shop{db: db, table: t.Stock, item: item}).stock(ctx)
		if err != nil {
			return false, err
		}
		if n < units {
			return false, nil // refused whole
		}
		stock[item] = n - units
	}
	if err := sleep(ctx, think); err != nil {
		return false, err
	}
	items := make([]types.TransactWriteItem, 0, len(stock))
	for _, item := range slices.Sorted(maps.Keys(stock)) {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(t.Stock),
			Key:                       map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: item}},
			UpdateExpression:          aws.String("SET #s = :s"),
			ExpressionAttributeNames:  map[string]string{"#s": attrStock},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberN{Value: strconv.FormatInt(stock[item], 10)}},
		}})
	}
	if err := l.Guard(ctx, store.Writes(items...)); err != nil {
		return false, fmt.Errorf("writing the stock of %v: %w", keys, err)
	}
	return true, nil
}

// printOrders writes the report of the orders run.
func printOrders(out io.Writer, r orderResult) {
	fmt.Fprintf(out, "  %d orders placed, %d refused (an item short), in %v; up to %d items locked by one order\n",
		r.Placed, r.Refused, r.Elapsed.Round(time.Millisecond), r.MostKeys)
	for _, item := range slices.Sorted(maps.Keys(r.Initial)) {
		fmt.Fprintf(out, "  %-8s stock %3d → %3d, sold %3d\n", item, r.Initial[item], r.Final[item], r.Sold[item])
	}
	if r.Exact() {
		fmt.Fprintln(out, "  every item's stock fell by exactly the units sold of it: exact")
	} else {
		fmt.Fprintln(out, "  NOT EXACT")
	}
}
