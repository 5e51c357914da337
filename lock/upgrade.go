package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/readlease"
	"github.com/dynalease/dynalease/internal/rows"
)

// WithUpgradeable makes AcquireShared take the key's upgradeable shared
// hold: the one shared hold of the key that may become its writer without
// releasing (Lock.Upgrade). A key has at most one at a time: an
// upgradeable AcquireShared waits while another holds, as a reader waits
// behind a writer. Other acquisitions refuse it.
func WithUpgradeable() AcquireOption { return func(a *acquireConfig) { a.upgradeable = true } }

// Upgrade makes l, an upgradeable shared hold (WithUpgradeable), the key's
// writer without releasing it, and returns the exclusive Lock; l then ends
// (its Err is ErrNotHeld) without a write of its own.
//
// It holds new readers back (it joins the key's queue, as a writer does),
// waits for the other readers to release, and takes the key with a write
// conditioned on the row it read, holding no entry but l's: ahead of the
// writers queued before it, which wait for l as for any reader, this
// client's own included (an upgrade never waits for a writer, in process
// or in the table). Readers that went silent are taken over once their
// entries have stayed unchanged for the row's lease, as by any writer;
// l's own heartbeats, which go on while it waits, do not restart that
// wait.
//
// It gives up as Acquire does: with an error matching ErrLocked when
// other readers still hold after their lease plus WithAdditionalWait, or
// with ctx's error; l is then still held. One exception: when it gives
// up while the upgrade's write is in doubt (sent, its answer not seen),
// that write may have landed, ending l's entry with it, and it is
// released (the upgrade did not happen): l ends first, lost
// (ReleasedElsewhere, by this client), whether or not the write landed,
// and the error matches both the wait's (ctx's, ErrLocked) and l's
// *dynalease.LostError. When l ends first (released, lost, expired while cut off from
// the table) the wait ends at once, and Upgrade returns ErrNotHeld or l's
// *dynalease.LostError. It returns an error matching dynalease.ErrLost
// when it finds the row without l's entry (a writer took it, or l's entry
// was taken over): it never takes a row l no longer holds. It refuses,
// without a request, a lock that is not an upgradeable shared hold. Of
// the acquire options it takes WithAdditionalWait, WithRefreshPeriodFor
// and WithSessionMonitor.
func (l *Lock) Upgrade(ctx context.Context, opts ...AcquireOption) (*Lock, error) {
	reader, a, err := l.upgradeConfig(opts)
	if err != nil {
		return nil, err
	}
	c, k := l.c, l.lease.Key()
	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	base := c.base.At(k)
	up := readlease.NewUpgrade(base.With(c.writeOptions(nil)), reader)
	l.marks |= upgrading
	l.extrasLocked().upgrade = up
	lctx := l.ctxLocked()
	l.mu.Unlock()
	// The wait ends with l: an upgrade of a reader that no longer holds
	// has nothing to upgrade. (Not when l ended by the upgrade's own write,
	// found by a heartbeat: the wait is then about to return it.)
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(lctx, func() {
		l.mu.Lock()
		upgraded := l.marks&upgraded != 0
		l.mu.Unlock()
		if !upgraded {
			cancel(errReaderEnded)
		}
	})
	defer stop()
	w, err := c.acquireTarget(wctx, target{key: k, upgrade: up, abandoning: l.abandonUpgrade}, a, false)
	if err != nil {
		return nil, l.upgradeFailed(ctx, wctx, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.marks&upgraded == 0 && (l.errLocked() != nil || l.c.k.Passed(l)) {
		// l was lost before the write that made w: no upgrade without
		// releasing, so none.
		l.marks &^= upgrading
		lerr := l.heldLocked()
		l.mu.Unlock()
		_ = w.Release(context.WithoutCancel(ctx))
		l.mu.Lock()
		return nil, lerr
	}
	l.endUpgradedLocked()
	return w, nil
}

// upgradeConfig returns the reader of l, which must be upgradeable, and
// the acquire configuration of its upgrade with opts, which Upgrade
// takes only some of.
func (l *Lock) upgradeConfig(opts []AcquireOption) (*readlease.Reader, acquireConfig, error) {
	var reader *readlease.Reader
	if l.x != nil {
		reader = l.x.shared
	}
	if reader == nil || !reader.IsUpgradeable() {
		return nil, acquireConfig{}, invalid("Upgrade", "only an upgradeable shared lock upgrades (AcquireShared with WithUpgradeable)")
	}
	k := l.lease.Key()
	a, _, err := l.c.acquireConfig(k.Partition, append([]AcquireOption{WithSortKeyValue(k.Sort)}, opts...))
	if err != nil {
		return nil, a, err
	}
	if name := a.refusedForShared(); name != "" || a.upgradeable {
		if name == "" {
			name = "WithUpgradeable"
		}
		return nil, a, invalid(name, "Upgrade takes WithAdditionalWait, WithRefreshPeriodFor and WithSessionMonitor")
	}
	return reader, a, nil
}

// errReaderEnded is the cause of an upgrade's wait ended by its reader's
// end.
var errReaderEnded = errors.New("the upgrading shared lock ended")

// upgradeFailed returns the error of an upgrade of l whose wait, under
// wctx (ctx's, ended also by l's end), failed with err; l is still
// upgrading.
func (l *Lock) upgradeFailed(ctx, wctx context.Context, err error) error {
	k := l.lease.Key()
	l.mu.Lock()
	l.marks &^= upgrading
	lerr := l.errLocked()
	l.mu.Unlock()
	switch {
	case errors.Is(context.Cause(wctx), errReaderEnded) && ctx.Err() == nil:
		// l ended first: its own error (ErrNotHeld, or its loss).
		return lerr
	case errors.Is(err, readlease.ErrEntryGone):
		// The row no longer has l's entry: l is lost, whether or not its
		// own heartbeat has found it yet.
		return fmt.Errorf("lock %q: upgrade: %w: %w", k, dynalease.ErrLost, err)
	case errors.Is(lerr, errUpgradeAbandoned):
		return fmt.Errorf("lock %q: upgrade: %w; its write was in doubt, and was released, which ended the shared lock: %w", k, err, lerr)
	}
	return err
}

// errUpgradeAbandoned is the cause of the loss of a shared lock whose
// upgrade gave up with its write in doubt.
var errUpgradeAbandoned = errors.New("the upgrade gave up with its write in doubt: had it landed, the shared lock's entry went with it, and the row is released")

// abandonUpgrade ends l, whose upgrade gives up with its write in doubt,
// before that write is released: had it landed, l's entry went with it,
// and the release frees the row for anyone. So l stops holding first
// (lost, released by this client), whether or not the write landed: an
// entry of l's left in the row runs out like any silent reader's.
func (l *Lock) abandonUpgrade() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loseLocked(&dynalease.LostError{Lease: l.lease.Key().String(), Reason: dynalease.ReleasedElsewhere,
		HolderIdentity: l.c.cfg.identity, Cause: errUpgradeAbandoned})
}

// refusedForShared returns the first option a shared lock (AcquireShared,
// Upgrade) refuses, "" for none: it writes no data, attributes or numbers,
// is not reentrant and takes a missing row as it is.
func (a *acquireConfig) refusedForShared() string {
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"WithData", a.data != nil}, {"WithReplaceData", !a.replaceData}, {"WithDeleteOnRelease", a.deleteOnRelease},
		{"WithAcquireOnlyIfExists", a.onlyIfExists}, {"WithAttributes", a.attributes != nil},
		{"WithReentrant", a.reentrant}, {"ledger", a.numbers != nil || a.below != nil},
	} {
		if o.set {
			return o.name
		}
	}
	return ""
}

// endUpgradedLocked ends a shared lock whose upgrade landed: its entry
// went with the upgrade's write, so it ends as released, without a write.
func (l *Lock) endUpgradedLocked() {
	l.marks |= upgraded
	if l.errLocked() == nil {
		l.endLocked(ErrNotHeld)
		l.reportReleasedLocked()
	}
	go l.c.unclaimLock(l)
}

// upgradedLocked reports whether it, the row a heartbeat of l found l
// lost in, is l's own upgrade: l is upgrading and the row carries an RVN
// the upgrade wrote (not merely this client's identity: another wait of
// this client may have been handed the row). The heartbeat then ends l as
// Upgrade would.
func (l *Lock) upgradedLocked(it rows.Item) bool {
	return l.marks&upgrading != 0 && l.x != nil && l.x.upgrade != nil && l.x.upgrade.Wrote(it.RVN)
}
