//go:build unix

package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// prober measures the round trip to DynamoDB Local with the two kinds of
// request the candidates send: a strongly consistent read of the lease, and
// a conditional write, here one that always fails its condition (on a
// scratch item, so it never touches the lease).
type prober struct {
	store       *dynamodbstore.Store
	read, write resourcelock.Key

	mu   sync.Mutex
	rtts []time.Duration
	errs int
}

func newProber(client *dynamodb.Client, name string) (*prober, error) {
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table, RequestTimeout: time.Second})
	if err != nil {
		return nil, err
	}
	return &prober{store: store, read: resourcelock.Key{Partition: name}, write: resourcelock.Key{Partition: name + "-probe"}}, nil
}

// once sends one read and one write and returns their round trips.
func (p *prober) once(ctx context.Context) (rtts []time.Duration, errs int) {
	t := time.Now()
	_, err := rows.MustOpen(p.store).Get(ctx, p.read)
	rtts = append(rtts, time.Since(t))
	if err != nil && !errors.Is(err, resourcelock.ErrNotFound) {
		errs++
	}
	t = time.Now()
	never := resourcelock.Precondition{RVN: "never-written"}
	_, err = rows.MustOpen(p.store).Update(ctx, p.write, never, resourcelock.Record{HolderIdentity: "demo-probe", RVN: "probe", LeaseDuration: time.Second}, rows.WriteOptions{})
	rtts = append(rtts, time.Since(t))
	if !errors.Is(err, resourcelock.ErrConflict) {
		errs++
	}
	return rtts, errs
}

// warmUp sends requests for dur without recording them: the emulator's
// first requests are slow while the JVM compiles its code.
func (p *prober) warmUp(ctx context.Context, dur time.Duration) {
	for end := time.Now().Add(dur); time.Now().Before(end) && ctx.Err() == nil; {
		p.once(ctx)
	}
}

// run probes every period until ctx is done.
func (p *prober) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rtts, errs := p.once(ctx)
		if ctx.Err() != nil {
			return // cut short: not a round trip
		}
		p.mu.Lock()
		p.rtts = append(p.rtts, rtts...)
		p.errs += errs
		p.mu.Unlock()
	}
}

// stats returns the median and the largest round trip recorded, how many
// there were, and how many probes failed.
func (p *prober) stats() (median, largest time.Duration, n, errs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rtts) == 0 {
		return 0, 0, 0, p.errs
	}
	s := slices.Sorted(slices.Values(p.rtts))
	return s[len(s)/2], s[len(s)-1], len(s), p.errs
}
