package faulty

import (
	"context"
	"errors"
	"sync"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Op names a method of rows.Store that sends a request.
type Op string

// The operations Store counts and can fail.
const (
	OpGet    Op = "Get"
	OpCreate Op = "Create"
	OpUpdate Op = "Update"
)

// Fault says what happens to one call. The zero Fault passes the call
// through unchanged.
type Fault struct {
	// Block, when non-nil, holds the call until Block is closed or the
	// call's context is done. A call whose context ends while blocked
	// returns the context's error and is not applied, unless Land is set.
	Block <-chan struct{}
	// IgnoreCancel makes Block wait for Block to close even after the
	// call's context is done, like an implementation that ignores its
	// context. The call then proceeds as if Block had closed normally.
	IgnoreCancel bool
	// Land applies the call to the wrapped store (after Block) even though
	// the caller then sees Err: the write landed but its answer was lost.
	Land bool
	// Err, when non-nil, is returned to the caller instead of the wrapped
	// store's answer. Without Land the call is not applied.
	Err error
	// Stall, when set (and Err is not), is called once the call has been
	// answered, before the answer returns: the caller was paused there
	// (SIGSTOP, a long garbage collection). The answer is returned
	// whatever the caller's context did meanwhile.
	Stall func()
}

// Call records one call seen by a Store.
type Call struct {
	Op  Op
	Err error // what the caller got
}

// faults records the calls of a Store and the faults injected for
// them. It is safe for concurrent use.
type faults struct {
	mu     sync.Mutex
	faults map[Op][]queued
	calls  []Call
	onCall func(Op)
	hide   bool // failed conditions carry no row
}

type queued struct {
	fault Fault
	left  int // calls left; negative means every call
}

// Inject makes the next n calls of op suffer fault, after any faults queued
// earlier for op are used up. n < 0 applies it to every later call until
// Clear.
func (f *faults) Inject(op Op, n int, fault Fault) {
	if n == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = append(f.faults[op], queued{fault: fault, left: n})
}

// HideConflictRows makes every failed condition carry no row
// (rows.CurrentItem finds none), as a store that does not
// return one: the caller must then read the row to settle its write. The
// engine's read fallback is tested this way.
func (f *faults) HideConflictRows(hide bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hide = hide
}

// Clear removes every queued fault.
func (f *faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = map[Op][]queued{}
}

// OnCall sets a function called at the start of every call, before any
// fault applies. It must not call Faulty's methods that take its lock.
func (f *faults) OnCall(fn func(Op)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onCall = fn
}

// Calls returns the calls completed so far, in order of completion.
func (f *faults) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Count returns how many calls of op have completed.
func (f *faults) Count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.Op == op {
			n++
		}
	}
	return n
}

// ResetCalls forgets the calls recorded so far.
func (f *faults) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

func (f *faults) next(op Op) (Fault, func(Op)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.faults[op]
	if len(q) == 0 {
		return Fault{}, f.onCall
	}
	fault := q[0].fault
	if q[0].left > 0 {
		q[0].left--
		if q[0].left == 0 {
			f.faults[op] = q[1:]
		}
	}
	return fault, f.onCall
}

func (f *faults) do(ctx context.Context, op Op, apply func() (resourcelock.Record, error)) (rec resourcelock.Record, err error) {
	fault, onCall := f.next(op)
	if onCall != nil {
		onCall(op)
	}
	defer func() {
		f.mu.Lock()
		if f.hide {
			err = withoutCurrent(err)
		}
		f.calls = append(f.calls, Call{Op: op, Err: err})
		f.mu.Unlock()
	}()
	if fault.Block != nil && fault.IgnoreCancel {
		<-fault.Block
	} else if fault.Block != nil {
		select {
		case <-fault.Block:
		case <-ctx.Done():
			if fault.Land {
				apply()
			}
			return resourcelock.Record{}, ctx.Err()
		}
	}
	if fault.Err == nil {
		if err := ctx.Err(); err != nil {
			return resourcelock.Record{}, err
		}
		rec, err := apply()
		if fault.Stall != nil {
			fault.Stall()
		}
		return rec, err
	}
	if fault.Land {
		apply()
	}
	return resourcelock.Record{}, fault.Err
}

// withoutCurrent returns err as a store that returns no row with a failed
// condition would answer: it still matches ErrConflict and wraps the
// store's cause, but rows.CurrentItem finds no row in it.
func withoutCurrent(err error) error {
	if _, ok := rows.CurrentItem(err); !ok {
		return err
	}
	return rowHidden{err}
}

// rowHidden is a Conflict whose row is hidden: Unwrap skips the conflict
// itself, which carries the row, and goes on to the store's cause.
type rowHidden struct{ conflict error }

func (e rowHidden) Error() string        { return e.conflict.Error() }
func (e rowHidden) Is(target error) bool { return target == resourcelock.ErrConflict }
func (e rowHidden) Unwrap() error {
	// Skip every layer down to the one that carries the row.
	err := e.conflict
	for {
		next := errors.Unwrap(err)
		if _, ok := rows.CurrentItem(next); !ok {
			return next
		}
		err = next
	}
}
