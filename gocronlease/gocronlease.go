// Package gocronlease gives gocron v2 (github.com/go-co-op/gocron/v2) its
// distributed Elector and Locker over dynalease, for users who keep gocron
// as their scheduler.
//
// What they cannot guarantee, whatever the store behind them, and what to
// use instead:
//
//   - Locker takes a lock per run, named after the job, on each instance's
//     own tick. A run that ends before another instance's tick for the same
//     slot comes lets that instance run the slot again: a fast job runs on
//     every instance whose clock or start time is shifted from the others'
//     (gocron's own tracker documents it). Nothing records which slot ran.
//   - Elector lets only the leader's gocron run jobs. A slot that falls due
//     while the leadership changes hands is lost (the new leader's gocron
//     waits for the next one), and a new leader whose clock is behind can
//     run a slot the old one already ran.
//
// Package schedule (github.com/dynalease/dynalease/schedule) has neither
// flaw: each slot is written into the job's lock row by the write that
// takes the lock, so it starts once across the fleet, never after a later
// slot, and is started by another instance when the one due to run it dies.
package gocronlease

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-co-op/gocron/v2"

	"github.com/dynalease/dynalease/lock"
)

// ErrNotLeader is IsLeader's answer on an instance that does not lead.
var ErrNotLeader = errors.New("gocronlease: not the leader")

// Leader is what Elector asks: an *election.Elector is one.
type Leader interface {
	IsLeader() bool
}

// Elector is a gocron.Elector: only the instance whose Leader leads runs
// jobs. Run the Leader (election.Elector.Run) beside gocron's scheduler.
type Elector struct {
	Leader Leader
}

var _ gocron.Elector = Elector{}

// IsLeader returns nil while this instance leads, else ErrNotLeader.
func (e Elector) IsLeader(context.Context) error {
	if e.Leader.IsLeader() {
		return nil
	}
	return ErrNotLeader
}

// Locker is a gocron.Locker: each run of a job holds the dynalease lock
// named Prefix + the job's name for as long as it runs (its heartbeats keep
// it), or the run is not started when another instance holds it.
type Locker struct {
	Locks  *lock.Client
	Prefix string
}

var _ gocron.Locker = Locker{}

// Lock takes the job's lock without waiting: gocron skips the run when it
// is held elsewhere (the error wraps lock.ErrLocked).
func (l Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	held, err := l.Locks.TryAcquire(ctx, l.Prefix+key)
	if err != nil {
		return nil, fmt.Errorf("gocronlease: %w", err)
	}
	return heldLock{held}, nil
}

type heldLock struct{ l *lock.Lock }

// Unlock releases the lock, by a write conditioned on holding it.
func (h heldLock) Unlock(ctx context.Context) error { return h.l.Release(ctx) }
