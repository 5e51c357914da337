package rvnlease

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dynalease/dynalease/internal/timing"
)

// Validities ends the validities of many holds of one holder (the locks of
// a client) on one timer of the clock: a hold of H is valid until the set's
// validity after its send time (the send of its last confirmed write,
// which only moves later), unless ended first. The timer is set for the
// earliest end among the holds, and when it fires every hold whose end the
// clock has reached is expired (the expire callback, in the firing
// goroutine) before the timer is set again for the next: a hold ends when
// its own end comes, without any loop, at the cost of
// one timer per holder rather than one per hold.
//
// A confirmed write only moves a hold's end later, so the timer never
// needs to be moved by a renewal: it fires early, finds nothing due and
// is set again, about once per validity minus the renewal period when
// every renewal is confirmed.
//
// H is the holder's hold (a pointer); send returns where the hold keeps
// its send time (as a Duration since the set's epoch: a third of a
// time.Time, in every one of thousands of holds), and validity its
// Validity. The set writes the send time
// and the Validity only under its own lock, and only in the calls below;
// the holder serializes those calls under a mutex of its own and may read
// the send time, Passed and Until under that mutex alone. The set calls
// expire without its lock held, so expire may take the holder's mutex and
// call the set.
type Validities[H comparable] struct {
	clk      timing.Clock
	epoch    time.Time
	validity time.Duration
	send     func(H) *time.Duration
	of       func(H) *Validity
	expire   func(H)

	mu    sync.Mutex
	heap  []H // by end, earliest first
	timer clock.Timer
	armed time.Time // when timer fires; zero when unset
}

// Validity is one hold's place in its Validities.
type Validity struct {
	index int32 // in the heap, or -1 when not in it (expired, ended)
	ended bool
}

// unstarted is the validity of a hold never started: out of the heap,
// passed, and ending it touches no other hold.
func unstarted() Validity { return Validity{index: -1, ended: true} }

// NewValidities returns an empty set of validities of validity each,
// keeping send times as Durations since epoch (any time of the clock: a
// send time before it is a negative Duration).
func NewValidities[H comparable](clk timing.Clock, epoch time.Time, validity time.Duration, send func(H) *time.Duration, of func(H) *Validity, expire func(H)) *Validities[H] {
	return &Validities[H]{clk: clk, epoch: epoch, validity: validity, send: send, of: of, expire: expire}
}

// Start adds h, valid until the validity after sent. A hold whose end has
// already come is expired at once, from the timer's goroutine.
func (s *Validities[H]) Start(h H, sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.send(h) = sent.Sub(s.epoch)
	v := s.of(h)
	v.ended = false
	v.index = int32(len(s.heap))
	s.heap = append(s.heap, h)
	s.up(int(v.index))
	s.armLocked()
}

// Extend moves h's send time to sent when that is later. It reports
// false, changing nothing, once h's validity has passed or ended: a
// validity never resumes.
func (s *Validities[H]) Extend(h H, sent time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.passedLocked(h) {
		return false
	}
	if p, d := s.send(h), sent.Sub(s.epoch); d > *p {
		*p = d
		s.down(int(s.of(h).index))
	}
	return true
}

// End ends h's validity now: Passed is true from here on, and h is never
// expired.
func (s *Validities[H]) End(h H) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.of(h)
	v.ended = true
	if v.index >= 0 {
		s.remove(int(v.index))
	}
	// The timer stays set, even with no hold left: it fires once for
	// nothing, and a hold started before then, whose end is later, needs
	// no timer of its own (a client that acquires and releases one lock
	// at a time sets no timer per lock).
}

// Passed reports whether the clock has reached h's end, or h ended. Call
// it under the holder's mutex (or the set's).
func (s *Validities[H]) Passed(h H) bool {
	return s.passedLocked(h)
}

func (s *Validities[H]) passedLocked(h H) bool {
	return s.of(h).ended || !s.clk.Now().Before(s.Until(h))
}

// Until returns h's end: its send time plus the validity. Call it under
// the holder's mutex (or the set's).
func (s *Validities[H]) Until(h H) time.Time {
	return s.epoch.Add(timing.Add(*s.send(h), s.validity))
}

// armLocked sets the timer for the earliest end, unless it is already set
// for that time or earlier. A new timer rather than Reset: a fake clock
// blocks when a fired AfterFunc timer fires again. The callback starts a
// goroutine because a fake clock runs AfterFunc callbacks while holding
// its own lock, so they may not read the clock.
func (s *Validities[H]) armLocked() {
	if len(s.heap) == 0 {
		return
	}
	at := s.Until(s.heap[0])
	if s.timer != nil && !s.armed.After(at) {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.armed = at
	s.timer = s.clk.AfterFunc(at.Sub(s.clk.Now()), func() { go s.fire() })
	if !s.clk.Now().Before(at) {
		// The clock reached the end while the timer was being set (a
		// stall, or a fake clock stepped meanwhile, which fires a timer
		// already due only at its next step): fire now. A second fire
		// finds nothing due.
		go s.fire()
	}
}

// fire expires every hold whose end has come, and sets the timer for the
// next end.
func (s *Validities[H]) fire() {
	s.mu.Lock()
	now := s.clk.Now()
	var due []H
	for len(s.heap) > 0 && !now.Before(s.Until(s.heap[0])) {
		due = append(due, s.heap[0])
		s.remove(0)
	}
	// The timer that fired is spent; whichever timer is set now is
	// replaced by one for the earliest end.
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer, s.armed = nil, time.Time{}
	s.armLocked()
	s.mu.Unlock()
	for _, h := range due {
		s.expire(h)
	}
}

// Len returns how many holds the set times.
func (s *Validities[H]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heap)
}

// The heap: a binary min-heap of holds by end, each hold knowing its index.

func (s *Validities[H]) less(i, j int) bool {
	return *s.send(s.heap[i]) < *s.send(s.heap[j])
}

func (s *Validities[H]) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.of(s.heap[i]).index = int32(i)
	s.of(s.heap[j]).index = int32(j)
}

func (s *Validities[H]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			return
		}
		s.swap(i, parent)
		i = parent
	}
}

func (s *Validities[H]) down(i int) {
	n := len(s.heap)
	for {
		child := 2*i + 1
		if child >= n {
			return
		}
		if right := child + 1; right < n && s.less(right, child) {
			child = right
		}
		if !s.less(child, i) {
			return
		}
		s.swap(i, child)
		i = child
	}
}

// remove takes the hold at index i out of the heap.
func (s *Validities[H]) remove(i int) {
	last := len(s.heap) - 1
	h := s.heap[i]
	if i != last {
		s.swap(i, last)
	}
	var zero H
	s.heap[last] = zero
	s.heap = s.heap[:last]
	if i != last {
		s.down(i)
		s.up(i)
	}
	s.of(h).index = -1
	if cap(s.heap) > 64 && len(s.heap) < cap(s.heap)/4 {
		// Give back the memory of a crowd of holds that has gone.
		s.heap = append([]H(nil), s.heap...)
	}
}
