package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// Row 6b's settings: a dead waiter's lease, the live clients' lease and
// refresh period (those of row 6).
const (
	killedLease = 2 * time.Second
)

// killedWaiterResult is row 6b's result: a waiter that died while queued
// holds the others up once, when its turn comes.
type killedWaiterResult struct {
	Trials     int       `json:"trials"`
	DeadLeaseS float64   `json:"dead_waiter_lease_s"`
	RefreshMs  float64   `json:"refresh_period_ms"`
	DelayMs    []float64 `json:"delay_beyond_dead_lease_ms"`
	MedianMs   float64   `json:"median_delay_beyond_dead_lease_ms"`
	MaxMs      float64   `json:"max_delay_beyond_dead_lease_ms"`
	Failed     []string  `json:"failed_trials,omitempty"`
}

// rowKilledWaiter is row 6b: a holder releases with a dead waiter at the
// queue's head and a live one behind it. The dead waiter is an entry
// nobody acts on (its process killed after it joined): the release hands
// the lock to it, nobody confirms, and the live waiter takes it over once
// the handed RVN has stayed unchanged for the dead waiter's lease. The
// figure is the time from the release to the live waiter's acquisition,
// less that lease; the bound is about one refresh period.
func (b *bench) rowKilledWaiter(ctx context.Context) error {
	table, err := b.table(ctx, "killedwaiter")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	res := &killedWaiterResult{Trials: b.sc.CrashTrials, DeadLeaseS: killedLease.Seconds(), RefreshMs: ms(contRefresh)}
	b.res.KilledWaiter = res
	c := b.clients.client(newCounter(), nil)
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table})
	if err != nil {
		return err
	}
	newClient := func(name string) (*lock.Client, error) {
		return newLocks(c, table, lock.Config{Identity: name + "-" + b.runID, LeaseDuration: contLease, RefreshPeriod: contRefresh, HeartbeatPeriod: contHeartbeat})
	}
	var delays []time.Duration
	for trial := range res.Trials {
		d, err := b.killedWaiterTrial(ctx, store, newClient, fmt.Sprintf("killed-%d-%s", trial, b.runID))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res.Failed = append(res.Failed, fmt.Sprintf("trial %d: %v", trial, err))
			continue
		}
		delays = append(delays, d)
		res.DelayMs = append(res.DelayMs, ms(d))
	}
	res.MedianMs, res.MaxMs = ms(median(delays)), ms(maxDur(delays))
	return nil
}

func (b *bench) killedWaiterTrial(ctx context.Context, store *dynamodbstore.Store, newClient func(string) (*lock.Client, error), key string) (time.Duration, error) {
	holder, err := newClient("holder")
	if err != nil {
		return 0, err
	}
	defer holder.Close(context.Background())
	live, err := newClient("live")
	if err != nil {
		return 0, err
	}
	defer live.Close(context.Background())
	l, err := holder.Acquire(ctx, key)
	if err != nil {
		return 0, err
	}
	dead := rows.Waiter{Ticket: uuid.NewString(), Identity: "dead-" + b.runID, Lease: killedLease}
	if _, err := rows.MustOpen(store).Join(ctx, resourcelock.Key{Partition: key}, dead); err != nil {
		return 0, fmt.Errorf("the dead waiter's join: %w", err)
	}
	type got struct {
		l   *lock.Lock
		err error
		at  time.Time
	}
	ch := make(chan got, 1)
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	go func() {
		ll, err := live.Acquire(actx, key, lock.WithAdditionalWait(time.Minute))
		ch <- got{ll, err, time.Now()}
	}()
	// Release once the live waiter is queued behind the dead one.
	for {
		it, err := rows.MustOpen(store).Get(ctx, resourcelock.Key{Partition: key})
		if err != nil {
			return 0, err
		}
		if len(it.Queue) == 2 {
			break
		}
		if actx.Err() != nil {
			return 0, errors.New("the live waiter never joined the queue")
		}
		time.Sleep(5 * time.Millisecond)
	}
	released := time.Now()
	if err := l.Release(ctx); err != nil {
		return 0, err
	}
	g := <-ch
	if g.err != nil {
		return 0, g.err
	}
	defer g.l.Release(context.Background())
	return g.at.Sub(released) - killedLease, nil
}
