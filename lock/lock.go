package lock

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/utils/clock"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// Lock is a lock this client holds on one key, from a successful Acquire
// until Release or loss. Its methods are safe for concurrent use.
//
// Invariant: while the lock is held, the deadline is the lease minus the
// safety margin after the send time of the last write of this lock known to
// have landed, on the client's clock. The lock ends at the latest when the
// clock reaches the deadline: the client's timer of validities
// (rvnlease.Validities, one timer for all its locks, set for the earliest
// deadline) ends it without waiting for any heartbeat, and IsHeld compares
// with the clock directly, so a stuck heartbeat or a paused process cannot
// make it look held longer.
type Lock struct {
	c         *Client
	key       resourcelock.Key
	slot      *slot
	reentrant bool
	delete    bool // delete the row on release
	monitor   *sessionMonitor
	holds     int // guarded by c.mu

	// writing serializes the lock's writes, heartbeats and release: a
	// writer holds its one slot. hold, the engine's holder of the row, is
	// used only by the writer holding it.
	writing chan struct{}
	hold    *rvnlease.Holder

	mu          sync.Mutex
	item        resourcelock.Item // as last confirmed
	sent        time.Time         // send time of the last confirmed write; written by c.valid
	valid       rvnlease.Validity // the lock's place in c.valid; see the invariant
	lastErr     error             // the last failure of a heartbeat, for dynalease.Expired
	ended       bool
	err         error // why it ended: ErrReleased or a *dynalease.LostError
	releaseSent bool  // a release of the row was sent after the lock expired
	monitorT    clock.Timer
	monitorRan  bool
	handedOut   bool // Acquire returned it: counted in the metrics

	done   chan struct{}
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newLock(c *Client, k resourcelock.Key, s *slot, a acquireConfig, it resourcelock.Item, sent time.Time) *Lock {
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &Lock{
		c:         c,
		key:       k,
		slot:      s,
		reentrant: a.reentrant,
		delete:    a.deleteOnRelease,
		monitor:   a.monitor,
		holds:     1,
		item:      it,
		hold:      rvnlease.NewHolder(c.engine[0], holdPort{c: c, key: k}),
		done:      make(chan struct{}),
		writing:   make(chan struct{}, 1),
		ctx:       ctx,
		cancel:    cancel,
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c.valid.Start(l, sent)
	l.armMonitorLocked()
	return l
}

// startWrite takes the lock's write slot, waiting while another write of
// the lock is under way, or until ctx is done.
func (l *Lock) startWrite(ctx context.Context) error {
	select {
	case l.writing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endWrite gives the write slot back.
func (l *Lock) endWrite() { <-l.writing }

// Key returns the lock's key (its partition key value).
func (l *Lock) Key() string { return l.key.Partition }

// SortKey returns the lock's sort key value, empty without one.
func (l *Lock) SortKey() string { return l.key.Sort }

// Owner returns the owner name the lock is held under.
func (l *Lock) Owner() string { return l.c.cfg.owner }

// Data returns a copy of the data stored with the lock as last written.
func (l *Lock) Data() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.item.Data)
}

// Attributes returns the row's additional attributes as last written.
func (l *Lock) Attributes() map[string]types.AttributeValue {
	l.mu.Lock()
	defer l.mu.Unlock()
	return attributeValues(l.item.Attributes)
}

// RVN returns the record version number of the lock's last confirmed
// write.
func (l *Lock) RVN() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.item.RVN
}

// ValidUntil returns, on the client's clock, when the lock stops counting
// as held unless a heartbeat is confirmed first; the zero time when it is
// not held now (IsHeld is false): ended, or its validity passed, whether
// or not its timer has run yet (a process resumed after a pause reads the
// zero time at once).
func (l *Lock) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.c.valid.Passed(l) {
		return time.Time{}
	}
	return l.c.valid.Until(l)
}

// IsHeld reports whether the lock is held now: not released or lost, and
// the clock before ValidUntil. It turns false at that instant by itself.
//
// Like any lease check it cannot make acting on its answer safe: a process
// that pauses after the check may act after the lock was lost.
func (l *Lock) IsHeld() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.ended && !l.c.valid.Passed(l)
}

// Done returns a channel closed when the lock ends: lost, or released by
// its holder. Err then tells which.
func (l *Lock) Done() <-chan struct{} { return l.done }

// Err returns nil while the lock is held, ErrReleased after its Release,
// and a *dynalease.LostError (matching ErrLost) after it was lost.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Context returns a context derived from parent that is also cancelled,
// with Err as its cause, when the lock ends: work that must stop when the
// lock is lost runs under it.
func (l *Lock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(l.ctx, func() { cancel(context.Cause(l.ctx)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// armMonitorLocked sets the session monitor's timer for the safe time
// after the last confirmed write. A new timer rather than Reset: a fake
// clock blocks when a fired AfterFunc timer fires again; the callback
// starts a goroutine because a fake clock runs AfterFunc callbacks under
// its own lock, so they may not read the clock.
func (l *Lock) armMonitorLocked() {
	if l.monitor == nil || l.monitorRan {
		return
	}
	if l.monitorT != nil {
		l.monitorT.Stop()
	}
	l.monitorT = l.c.clk.AfterFunc(l.sent.Add(l.monitor.safeTime).Sub(l.c.clk.Now()), func() { go l.checkMonitor() })
}

// expired ends the lock when its validity has run out.
func (l *Lock) expired() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended && l.c.valid.Passed(l) {
		l.loseLocked(rvnlease.Expired(l.key.String(), l.lastErr))
	}
}

// checkMonitor runs the session monitor's callback once when the time
// since the last confirmed write has passed its safe time.
func (l *Lock) checkMonitor() {
	l.mu.Lock()
	run := !l.ended && !l.monitorRan && !l.c.clk.Now().Before(l.sent.Add(l.monitor.safeTime))
	if run {
		l.monitorRan = true
	}
	l.mu.Unlock()
	if run {
		l.c.log.Info("lock in danger: no heartbeat confirmed within the session monitor's safe time", "severity", "warning", "key", l.key.String())
		l.monitor.callback()
	}
}

// confirmLocked records a write of this lock, sent at sent, as landed, and
// reports whether the lock is still held. A lock whose validity has already
// run out stays lost: it never resumes. The row is recorded all the same,
// so that a release of the ended lock is conditioned on the RVN the row
// carries.
func (l *Lock) confirmLocked(it resourcelock.Item, sent time.Time) bool {
	if !l.ended && l.c.valid.Passed(l) {
		l.loseLocked(rvnlease.Expired(l.key.String(), l.lastErr))
	}
	if !sent.Before(l.sent) {
		l.item = it
	}
	if l.ended {
		return false
	}
	l.lastErr = nil
	if sent.After(l.sent) {
		l.c.valid.Extend(l, sent)
		l.armMonitorLocked()
	}
	return true
}

// countAcquired counts the lock as handed out after waiting wait; from
// here on its release or loss is counted too (a loss before this call is
// counted now).
func (l *Lock) countAcquired(wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handedOut = true
	l.c.cfg.metrics.Acquired(wait)
	if le, ok := l.err.(*dynalease.LostError); ok {
		l.c.cfg.metrics.LockLost(strings.ReplaceAll(le.Reason.String(), " ", "_"))
	}
}

// reportReleasedLocked counts the release of a lock that was handed out.
func (l *Lock) reportReleasedLocked() {
	if l.handedOut {
		l.c.cfg.metrics.Released()
	}
}

// loseLocked ends the lock with err.
func (l *Lock) loseLocked(err error) {
	if l.ended {
		return
	}
	l.c.log.Info("lock lost", "key", l.key.String(), "reason", err.Error())
	if le, ok := err.(*dynalease.LostError); ok && l.handedOut {
		l.c.cfg.metrics.LockLost(strings.ReplaceAll(le.Reason.String(), " ", "_"))
	}
	l.endLocked(err)
	// The slot is the client's, taken under its mutex, which may not be
	// taken under the lock's.
	go l.c.unclaim(l.key, l.slot)
}

// endLocked marks the lock ended with err. The caller lets go of the
// lock's slot (loseLocked does, once the lock's mutex is released; Release
// after its write).
func (l *Lock) endLocked(err error) {
	l.ended = true
	l.err = err
	l.c.failing.Forget(l.key.String()) // its heartbeats are over
	l.c.valid.End(l)
	if l.monitorT != nil {
		l.monitorT.Stop()
	}
	l.cancel(err)
	close(l.done)
}
