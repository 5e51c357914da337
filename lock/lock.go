package lock

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/readlease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/resourcelock"
)

// Lock is a lock this client holds on one key, from a successful Acquire
// until Release or loss. Its methods are safe for concurrent use.
//
// Invariant: while the lock is held, the deadline is the lease minus the
// safety margin after the send time of the last write of this lock known to
// have landed, on the client's clock. The lock ends at the latest when the
// clock reaches the deadline: the kernel's timer of validities (one
// timer for all the client's locks, set for the earliest deadline) ends it without waiting for any heartbeat, and IsHeld compares
// with the clock directly, so a stuck heartbeat or a paused process cannot
// make it look held longer.
type Lock struct {
	c *Client
	// lease is the key's lease with the client's hold options (a set's
	// name, for a set, whose holder writes through the set: holdLease).
	lease keylease.Lease
	claim *claim // the key's, or a set's first key's (which has the set)

	// hold is the kernel's hold of the row. Its writes are used only by
	// the writer holding the write turn (writing): the lock's writes,
	// heartbeats and release, go one at a time. Its validity (Sent, the
	// kernel's Passed, Until, Extend) is read and moved under mu.
	hold rvnlease.Hold

	mu    sync.Mutex
	row   heldRow // the row as last confirmed
	x     *extras // what most locks never need, made on first use
	holds int32   // the holds of a reentrant lock; 0 once its Release began
	marks marks

	// Set when the lock is made, never changed.
	kind      kind
	reentrant bool
	delete    bool // delete the row on release
}

// marks are a lock's flags that change, under its mu.
type marks uint8

const (
	writing            marks = 1 << iota // a writer holds the write turn
	handedOut                            // Acquire returned it, so its end is counted in the metrics
	releaseSent                          // a release of the row was sent after the lock expired
	foreignRVN                           // the row's RVN is not a rowID: extras.rvn has it
	foreignAcquisition                   // the row's acquisition ID is not a rowID: extras.acquisitionID has it
	ended                                // the lock ended: errLocked says why
	upgrading                            // a shared lock's Upgrade is under way
	upgraded                             // the shared lock ended by its Upgrade's write
)

// heldRow is what a lock keeps of its row as last confirmed: the fields
// its next write and its methods read. The rest of the row is this
// client's (identity, lease) or needs no keeping (renew time, key).
type heldRow struct {
	rvn           rowID // unless marked foreignRVN
	acquisitionID rowID // unless marked foreignAcquisition
	acquired      int64 // the row's AcquireTime in Unix milliseconds; 0 for none
	token         int64 // the row's fencing token (rows.Token)
}

// extras is the part of a lock's state that most held locks never need,
// made on first use; guarded by the lock's mu.
type extras struct {
	data       []byte         // the row's data, when it has any
	attributes map[string]any // the row's, when it has any
	queued     rows.Item      // the row's waiters (its Queue alone), when it has any
	lastErr    error          // the last failure of a heartbeat, for dynalease.Expired
	// err is why the lock ended, when that is not ErrNotHeld (a
	// *dynalease.LostError, or a release's own error): see errLocked.
	err error
	// rvn and acquisitionID are the row's when they are not rowIDs
	// (marked foreignRVN, foreignAcquisition).
	rvn, acquisitionID string
	// stintStart is when this client's stint on the key began: when it
	// first saw waiters in the row's queue since it last saw the queue
	// empty, or, for a row taken back within the stint, when the stint of
	// the lock that kept it began (rvnlease.Won.StintStart). A time since
	// the client's born. Kept only with a queue: a lock whose row shows
	// waiters has its extras, which hold them.
	stintStart time.Duration

	// shared is a shared hold's lease, with the client's hold options;
	// set when the lock is made.
	shared *readlease.Reader
	// upgrade is the shared hold's upgrade under way (marked upgrading).
	upgrade *readlease.Upgrade

	monitor    *sessionMonitor
	monitorT   clock.Timer
	monitorRan bool

	// ctx is cancelled with the lock's Err when it ends; made by the
	// first Done or Context.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// writeFree is closed when the write turn is given back, for writers
	// waiting for it; made by the first of them.
	writeFree chan struct{}
}

// closed is the Done channel of a lock that ended before anybody asked.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

func newLock(c *Client, t target, a acquireConfig, won rvnlease.Won) *Lock {
	it, sent := won.Item, won.Sent
	l := &Lock{
		c:         c,
		lease:     c.base.At(t.key),
		claim:     t.claim,
		kind:      t.kind(),
		reentrant: a.reentrant,
		delete:    a.deleteOnRelease,
		holds:     1,
	}
	if t.shared != nil {
		l.x = &extras{shared: t.shared.WithOptions(c.writeOptions(nil))}
	}
	// A hold kept by value, over a lease kept in the lock: no
	// allocation of their own.
	l.hold = c.k.Hold(l.holdLease())
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keepLocked(it)
	// After keepLocked, which would count the waiters it shows as new: a
	// row taken back within the stint continues it. A row without
	// waiters has no stint to continue (the first waiters start one).
	if l.x != nil && len(l.x.queued.Queue) > 0 {
		l.x.stintStart = won.StintStart.Sub(c.born)
	}
	if a.monitor != nil {
		l.extrasLocked().monitor = a.monitor
	}
	c.k.Start(l, sent)
	l.armMonitorLocked()
	return l
}

// errLocked returns nil while the lock lasts, and why it ended after:
// ErrNotHeld (a release), or the error kept in the extras (a
// *dynalease.LostError, the error of a release by Close). A released lock
// keeps no error of its own: the Lock stays in a smaller allocation, and
// a release allocates nothing for it.
func (l *Lock) errLocked() error {
	switch {
	case l.marks&ended == 0:
		return nil
	case l.x != nil && l.x.err != nil:
		return l.x.err
	default:
		return ErrNotHeld
	}
}

// setErrLocked ends the lock with err (not nil).
func (l *Lock) setErrLocked(err error) {
	l.marks |= ended
	if err != ErrNotHeld {
		l.extrasLocked().err = err
	} else if l.x != nil {
		l.x.err = nil
	}
}

// extrasLocked returns the lock's extras, making them first.
func (l *Lock) extrasLocked() *extras {
	if l.x == nil {
		l.x = &extras{}
	}
	return l.x
}

// keepLocked keeps what the lock needs of the row it, as last confirmed.
func (l *Lock) keepLocked(it rows.Item) {
	r := heldRow{token: it.Token()}
	if l.setIDsLocked(&r, it.RVN, it.AcquisitionID) && r.token == 0 {
		// A renewal never changes the acquisition's token: an answer
		// that does not carry it (a store's omission) does not lose it.
		r.token = l.row.token
	}
	if !it.AcquireTime.IsZero() {
		r.acquired = it.AcquireTime.UnixMilli()
	}
	l.row = r
	if len(it.Data) > 0 || len(it.Attributes) > 0 || len(it.Queue) > 0 {
		x := l.extrasLocked()
		if l.othersQueued(it) && !l.othersQueued(x.queued) {
			// The first waiters this lock sees since it last saw its
			// queue empty: their wait, as this client can tell it,
			// begins now, and so does the stint it bounds (see the
			// package doc, Stints).
			x.stintStart = l.c.clk.Since(l.c.born)
		}
		x.data, x.attributes, x.queued = it.Data, it.Attributes, rows.Item{Queue: it.Queue}
	} else if l.x != nil {
		l.x.data, l.x.attributes, l.x.queued = nil, nil, rows.Item{}
	}
}

// othersQueued reports whether the queue of it holds an entry of another
// client: a waiter (this client's own entries are stale ones of an
// earlier wait).
func (l *Lock) othersQueued(it rows.Item) bool {
	for _, w := range it.Queue {
		if w.Identity != l.c.cfg.identity {
			return true
		}
	}
	return false
}

// itemLocked returns the row as last confirmed, for a write over it: the
// kept fields, this client's identity and lease, and the lock's key.
func (l *Lock) itemLocked() rows.Item {
	it := rows.Item{
		Key: l.lease.Key(),
		Record: resourcelock.Record{
			HolderIdentity: l.c.cfg.identity,
			RVN:            l.rvnLocked(),
			LeaseDuration:  l.c.cfg.lease,
			AcquisitionID:  l.acquisitionIDLocked(),
		},
	}
	if l.row.acquired != 0 {
		// As stored: UTC, whole milliseconds, no monotonic reading.
		it.AcquireTime = time.UnixMilli(l.row.acquired).UTC()
	}
	if l.x != nil {
		it.Data, it.Attributes, it.Queue = l.x.data, l.x.attributes, l.x.queued.Queue
	}
	return it
}

// lastErrLocked returns the last failure of a heartbeat since the last
// confirmed one.
func (l *Lock) lastErrLocked() error {
	if l.x == nil {
		return nil
	}
	return l.x.lastErr
}

// startWrite takes the lock's write turn, waiting while another write of
// the lock is under way, or until ctx is done. A ctx already done takes
// nothing.
func (l *Lock) startWrite(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	for l.marks&writing != 0 {
		x := l.extrasLocked()
		if x.writeFree == nil {
			x.writeFree = make(chan struct{})
		}
		free := x.writeFree
		l.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.mu.Lock()
	}
	l.marks |= writing
	l.mu.Unlock()
	return nil
}

// endWrite gives the write turn back.
func (l *Lock) endWrite() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marks &^= writing
	if l.x != nil && l.x.writeFree != nil {
		close(l.x.writeFree)
		l.x.writeFree = nil
	}
}

// Key returns the lock's key (its partition key value).
func (l *Lock) Key() string { return l.lease.Key().Partition }

// sortKey returns the lock's sort key value, empty without one.
func (l *Lock) sortKey() string { return l.lease.Key().Sort }

// Data returns a copy of the data stored with the lock as last written.
func (l *Lock) Data() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.x == nil {
		return nil
	}
	return bytes.Clone(l.x.data)
}

// attributes returns a copy of the row's additional attributes as last
// written, their values of the store's own kind (see WithAttributes).
func (l *Lock) attributes() map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.x == nil || len(l.x.attributes) == 0 {
		return nil
	}
	return maps.Clone(l.x.attributes)
}

// rvn returns the record version number of the lock's last confirmed
// write.
func (l *Lock) rvn() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rvnLocked()
}

// ValidUntil returns, on the client's clock, when the lock stops counting
// as held unless a heartbeat is confirmed first; the zero time when it is
// not held now (IsHeld is false): ended, or its validity passed, whether
// or not its timer has run yet (a process resumed after a pause reads the
// zero time at once).
func (l *Lock) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errLocked() != nil || l.c.k.Passed(l) {
		return time.Time{}
	}
	return l.c.k.Until(l)
}

// IsHeld reports whether the lock is held now: not released or lost, and
// the clock before ValidUntil. It turns false at that instant by itself.
//
// Like any lease check it cannot make acting on its answer safe: a process
// that pauses after the check may act after the lock was lost.
func (l *Lock) IsHeld() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errLocked() == nil && !l.c.k.Passed(l)
}

// Done returns a channel closed when the lock ends: lost, or released by
// its holder. Err then tells which.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errLocked() != nil && (l.x == nil || l.x.ctx == nil) {
		return closed
	}
	return l.ctxLocked().Done()
}

// ctxLocked returns the context cancelled, with Err as its cause, when the
// lock ends (at once when it has), making it first.
func (l *Lock) ctxLocked() context.Context {
	x := l.extrasLocked()
	if x.ctx == nil {
		x.ctx, x.cancel = context.WithCancelCause(context.Background())
		if l.errLocked() != nil {
			x.cancel(l.errLocked())
		}
	}
	return x.ctx
}

// Err returns nil while the lock is held, ErrNotHeld after its Release,
// an error matching both ErrNotHeld and ErrClosed after the client's Close
// released it, and a *dynalease.LostError (matching dynalease.ErrLost)
// after it was lost.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errLocked()
}

// Context returns a context derived from parent that is also cancelled,
// with Err as its cause, when the lock ends: work that must stop when the
// lock is lost runs under it.
func (l *Lock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	l.mu.Lock()
	lctx := l.ctxLocked()
	l.mu.Unlock()
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(lctx, func() { cancel(context.Cause(lctx)) })
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
	x := l.x
	if x == nil || x.monitor == nil || x.monitorRan {
		return
	}
	if x.monitorT != nil {
		x.monitorT.Stop()
	}
	x.monitorT = l.c.clk.AfterFunc(l.hold.Sent().Add(x.monitor.safeTime).Sub(l.c.clk.Now()), func() { go l.checkMonitor() })
}

// expired ends the lock when its validity has run out.
func (l *Lock) expired() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireIfPassedLocked()
}

// expireIfPassedLocked ends a held lock whose validity has run out (its
// timer may not have fired yet) with the Expired loss, naming the last
// renewal's failure when there was one.
func (l *Lock) expireIfPassedLocked() {
	if l.errLocked() == nil && l.c.k.Passed(l) {
		l.loseLocked(rvnlease.Expired(l.lease.Key().String(), l.lastErrLocked()))
	}
}

// checkMonitor runs the session monitor's callback once when the time
// since the last confirmed write has passed its safe time.
func (l *Lock) checkMonitor() {
	l.mu.Lock()
	x := l.x
	run := l.errLocked() == nil && !x.monitorRan && !l.c.clk.Now().Before(l.hold.Sent().Add(x.monitor.safeTime))
	if run {
		x.monitorRan = true
	}
	l.mu.Unlock()
	if run {
		l.c.log.Info("lock in danger: no heartbeat confirmed within the session monitor's safe time", "severity", "warning", "key", l.lease.Key().String())
		x.monitor.callback()
	}
}

// confirmLocked records a write of this lock, sent at sent, as landed, and
// reports whether the lock is still held. A lock whose validity has already
// run out stays lost: it never resumes. The row is recorded all the same,
// so that a release of the ended lock is conditioned on the RVN the row
// carries.
func (l *Lock) confirmLocked(it rows.Item, sent time.Time) bool {
	l.expireIfPassedLocked()
	if !sent.Before(l.hold.Sent()) {
		l.keepLocked(it)
	}
	if l.errLocked() != nil {
		return false
	}
	if l.x != nil {
		l.x.lastErr = nil
	}
	if sent.After(l.hold.Sent()) {
		l.c.k.Extend(l, sent)
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
	l.marks |= handedOut
	l.c.cfg.metrics.Acquired(l.kind.String(), wait)
	if le, ok := l.errLocked().(*dynalease.LostError); ok {
		l.c.cfg.metrics.LockLost(l.kind.String(), strings.ReplaceAll(le.Reason.String(), " ", "_"))
	}
}

// reportReleasedLocked counts the release of a lock that was handed out.
func (l *Lock) reportReleasedLocked() {
	if l.marks&handedOut != 0 {
		l.c.cfg.metrics.Released(l.kind.String())
	}
}

// loseLocked ends the lock with err.
func (l *Lock) loseLocked(err error) {
	if l.errLocked() != nil {
		return
	}
	l.c.log.Info("lock lost", "key", l.lease.Key().String(), "reason", err.Error())
	if le, ok := err.(*dynalease.LostError); ok && l.marks&handedOut != 0 {
		l.c.cfg.metrics.LockLost(l.kind.String(), strings.ReplaceAll(le.Reason.String(), " ", "_"))
	}
	l.endLocked(err)
	// The claim is the client's, taken under its mutex, which may not be
	// taken under the lock's.
	go l.c.unclaimLock(l)
}

// endLocked marks the lock ended with err. The caller lets go of the
// lock's claims (loseLocked does, once the lock's mutex is released; Release
// after its write).
func (l *Lock) endLocked(err error) {
	l.setErrLocked(err)
	l.c.k.Forget(l.lease.Key().String()) // its heartbeats are over
	l.c.k.End(l)
	if x := l.x; x != nil {
		if x.monitorT != nil {
			x.monitorT.Stop()
		}
		if x.cancel != nil {
			x.cancel(err)
		}
	}
}
