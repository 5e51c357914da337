package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/testkit/logtest"
)

// The election durations of rows 2 and 4.
const (
	electLease    = 2 * time.Second
	electRenew    = 1500 * time.Millisecond
	electRetry    = 200 * time.Millisecond
	electPatience = 15 * time.Second // the longest any step of a trial may take
)

// candidate is one Elector standing in one Run, with what it reported.
type candidate struct {
	id  string
	e   *election.Elector
	rec *logtest.Recorder
	ctr *counter

	cancel context.CancelFunc
	done   chan error // Run's result

	started chan struct{} // closed when OnStartedLeading starts

	mu         sync.Mutex
	startedAt  time.Time // OnStartedLeading began
	workEndAt  time.Time // the leader's context was cancelled (the term ended)
	stoppedAt  time.Time // OnStoppedLeading ran
	everLeader bool
}

// startCandidate starts a Run of a new Elector for the lease name in table,
// on client c. onStart, when not nil, is called at the start of
// OnStartedLeading with its time.
// opts change the Elector's Config (a priority, say).
func startCandidate(ctx context.Context, c *dynamodb.Client, ctr *counter, table, name, id string, onStart func(*candidate, time.Time), opts ...func(*election.Config)) (*candidate, error) {
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table})
	if err != nil {
		return nil, err
	}
	cd := &candidate{id: id, rec: &logtest.Recorder{}, ctr: ctr, done: make(chan error, 1), started: make(chan struct{})}
	cfg := election.Config{
		Store:           store,
		Name:            name,
		Identity:        id,
		LeaseDuration:   electLease,
		RenewDeadline:   electRenew,
		RetryPeriod:     electRetry,
		ReleaseOnCancel: true,
		Logger:          cd.rec.Logger(),
		Callbacks: election.Callbacks{
			OnStartedLeading: func(lctx context.Context) {
				now := time.Now()
				cd.mu.Lock()
				cd.startedAt, cd.everLeader = now, true
				cd.mu.Unlock()
				close(cd.started)
				if onStart != nil {
					onStart(cd, now)
				}
				<-lctx.Done()
				cd.mu.Lock()
				cd.workEndAt = time.Now()
				cd.mu.Unlock()
			},
			OnStoppedLeading: func() {
				cd.mu.Lock()
				cd.stoppedAt = time.Now()
				cd.mu.Unlock()
			},
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	e, err := election.New(cfg)
	if err != nil {
		return nil, err
	}
	cd.e = e
	rctx, cancel := context.WithCancel(ctx)
	cd.cancel = cancel
	go func() { cd.done <- e.Run(rctx) }()
	return cd, nil
}

// stop cancels the Run and waits for it to return.
func (cd *candidate) stop() error {
	cd.cancel()
	select {
	case err := <-cd.done:
		cd.done <- err
		return nil
	case <-time.After(electPatience):
		return fmt.Errorf("candidate %s: Run did not return within %v of its cancel", cd.id, electPatience)
	}
}

// waitDone waits up to d for the Run to return by itself, and returns
// whether it did and its result.
func (cd *candidate) waitDone(d time.Duration) (bool, error) {
	select {
	case err := <-cd.done:
		cd.done <- err
		return true, err
	case <-time.After(d):
		return false, nil
	}
}

func (cd *candidate) times() (started, workEnd, stopped time.Time) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	return cd.startedAt, cd.workEndAt, cd.stoppedAt
}

// sent returns the "sent" times of the log entries with message msg, in
// order.
func (cd *candidate) sent(msg string) []time.Time {
	var out []time.Time
	for _, e := range cd.rec.Find(msg) {
		if t, ok := e.Values["sent"].(time.Time); ok {
			out = append(out, t)
		}
	}
	return out
}

// lastConfirmedSend returns the send time of the candidate's last write
// confirmed as leader: its acquisition or a renewal.
func (cd *candidate) lastConfirmedSend() (time.Time, bool) {
	var last time.Time
	for _, msg := range []string{"started leading", "renewed"} {
		for _, t := range cd.sent(msg) {
			if t.After(last) {
				last = t
			}
		}
	}
	return last, !last.IsZero()
}
