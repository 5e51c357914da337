package resourcelock

import (
	"fmt"
	"time"

	"github.com/dynalease/dynalease"
)

// Waiter is one entry of a row's queue: a client waiting to hold the lease.
//
// The queue is advice for order and liveness: no entry, and no read of
// one, gives anybody a hold. A holder proves its hold only by a write of
// its own RVN (see Record.HandedTo).
type Waiter struct {
	// Ticket names this one wait: a fresh unique string (a UUID).
	Ticket string
	// Identity is the waiter's holder identity.
	Identity string
	// Lease is the lease the waiter will hold; a hand-over to it writes
	// this lease into the row.
	Lease time.Duration
}

// Dequeue is a condition on a row's queue and a change of it, carried by a
// write (WriteOptions.Dequeue): the queue must begin with Tickets, which
// the write removes, and, when All, hold nothing else. A queue that differs
// fails the write's condition (ErrConflict, carrying the row).
type Dequeue struct {
	Tickets []string
	All     bool
}

// Check reports whether w can be written into a queue: a ticket, an
// identity within MaxIdentityBytes and a lease within MaxLeaseDuration. It
// returns an error matching dynalease.ErrInvalid.
func (w Waiter) Check() error {
	if w.Ticket == "" {
		return fmt.Errorf("%w: waiter has no ticket", dynalease.ErrInvalid)
	}
	if err := checkIdentity(w.Identity); err != nil {
		return err
	}
	if w.Lease <= 0 || w.Lease > MaxLeaseDuration {
		return fmt.Errorf("%w: waiter lease %v is not within (0, %v]", dynalease.ErrInvalid, w.Lease, MaxLeaseDuration)
	}
	return nil
}

// checkDequeue reports whether d can condition a write.
func checkDequeue(d *Dequeue) error {
	if d == nil {
		return nil
	}
	if len(d.Tickets) > MaxQueueLength {
		return fmt.Errorf("%w: dequeue of %d tickets, over the queue's %d", dynalease.ErrInvalid, len(d.Tickets), MaxQueueLength)
	}
	for _, t := range d.Tickets {
		if t == "" {
			return fmt.Errorf("%w: dequeue of an empty ticket", dynalease.ErrInvalid)
		}
	}
	return nil
}

// CheckLeave reports whether a Leave of ticket at index can be sent.
func CheckLeave(ticket string, index int) error {
	if ticket == "" {
		return fmt.Errorf("%w: leave of an empty ticket", dynalease.ErrInvalid)
	}
	if index < 0 || index >= MaxQueueLength {
		return fmt.Errorf("%w: leave at index %d, outside the queue's [0, %d)", dynalease.ErrInvalid, index, MaxQueueLength)
	}
	return nil
}

// Free reports whether the row may be taken by anyone, by Create: it is
// marked released and nobody waits in its queue. A released row with
// waiters queued belongs to the queue: it is taken by a write conditioned
// on its RVN (the queue's head, or the client that released it while
// others waited: see the lock package's fair waiting), and Join still
// appends to it.
func (it Item) Free() bool { return it.Released && len(it.Queue) == 0 }

// Place returns the index of ticket in the queue, or -1.
func (it Item) Place(ticket string) int {
	for i, w := range it.Queue {
		if w.Ticket == ticket {
			return i
		}
	}
	return -1
}

// queueMatches reports whether q satisfies d: it begins with d's tickets
// and, when d.All, holds nothing else. Stores without expressions (the
// memory store) use it.
func queueMatches(q []Waiter, d *Dequeue) bool {
	if d == nil {
		return true
	}
	if len(q) < len(d.Tickets) || (d.All && len(q) != len(d.Tickets)) {
		return false
	}
	for i, t := range d.Tickets {
		if q[i].Ticket != t {
			return false
		}
	}
	return true
}
