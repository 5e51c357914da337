package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/readlease"
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
// writers queued before it, which wait for l as for any reader. Readers
// that went silent are taken over after their lease, as by any writer.
// While it waits, l stays held and renews.
//
// It gives up as Acquire does: with an error matching ErrLocked when
// other readers still hold after their lease plus WithAdditionalWait, or
// with ctx's error; l is then still held. It returns ErrNotHeld or l's
// *dynalease.LostError when l ends first, and an error matching
// dynalease.ErrLost when it finds the row without l's entry (a writer took
// it, or l's entry was taken over): it never takes a row l no longer
// holds. It refuses, without a request, a lock that is not an upgradeable
// shared hold. Of the acquire options it takes
// WithAdditionalWait, WithRefreshPeriodFor and WithSessionMonitor.
func (l *Lock) Upgrade(ctx context.Context, opts ...AcquireOption) (*Lock, error) {
	var reader *readlease.Reader
	if l.x != nil {
		reader = l.x.shared
	}
	if reader == nil || !reader.IsUpgradeable() {
		return nil, invalid("Upgrade", "only an upgradeable shared lock upgrades (AcquireShared with WithUpgradeable)")
	}
	c, k := l.c, l.lease.Key()
	a, _, err := c.acquireConfig(k.Partition, append([]AcquireOption{WithSortKeyValue(k.Sort)}, opts...))
	if err != nil {
		return nil, err
	}
	if name := a.refusedForShared(); name != "" || a.upgradeable {
		if name == "" {
			name = "WithUpgradeable"
		}
		return nil, invalid(name, "Upgrade takes WithAdditionalWait, WithRefreshPeriodFor and WithSessionMonitor")
	}
	l.mu.Lock()
	if err := l.heldLocked(); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	l.marks |= upgrading
	l.mu.Unlock()
	base := c.base.At(k)
	up := readlease.NewUpgrade(base.With(c.writeOptions(nil)), reader)
	w, err := c.acquireTarget(ctx, target{key: k, upgrade: up}, a, false)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.marks &^= upgrading
		if errors.Is(err, readlease.ErrEntryGone) {
			// The row no longer has l's entry: l is lost, whether or
			// not its own heartbeat has found it yet.
			return nil, fmt.Errorf("lock %q: upgrade: %w: %w", k, dynalease.ErrLost, err)
		}
		return nil, err
	}
	if lerr := l.errLocked(); lerr != nil && !errors.Is(lerr, ErrNotHeld) {
		// l was lost before the write that made w: no upgrade without
		// releasing, so none.
		l.mu.Unlock()
		_ = w.Release(context.WithoutCancel(ctx))
		l.mu.Lock()
		return nil, lerr
	}
	l.endUpgradedLocked()
	return w, nil
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
	if l.errLocked() == nil {
		l.endLocked(ErrNotHeld)
		l.reportReleasedLocked()
	}
	go l.c.unclaimLock(l)
}

// upgradedLocked reports whether lost, a loss a heartbeat of l found, is
// l's own upgrade: l is upgrading and the row names this client (two
// clients never share an identity), which only the upgrade's write does
// to a row l read. The heartbeat then ends l as Upgrade would.
func (l *Lock) upgradedLocked(lost *dynalease.LostError) bool {
	return l.marks&upgrading != 0 && lost != nil && lost.HolderIdentity == l.c.cfg.identity
}
