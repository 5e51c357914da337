package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/clockutil"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/readlease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Client takes and keeps locks on any number of keys of one DynamoDB lock
// table, as one identity. Create one with New and share it: it runs the
// background heartbeats of every lock it holds. Its methods are safe for
// concurrent use.
type Client struct {
	store rows.Store
	cfg   config
	clk   clockutil.Clock
	log   logr.Logger
	base  *keylease.Lease // the client's leases: its store, identity and hold options (At a key)
	// k is the kernel: the one wait loop, the validities of the locks
	// held, their background heartbeats (unless manual), what the client
	// watched and the failures it keeps retrying.
	k    *rvnlease.Kernel[*Lock]
	born time.Time // on clk: locks keep their stint's start as a Duration since

	mu     sync.Mutex
	claims claims
	closed bool
	// readHints are what the last shared hold of each key saw of its row
	// (see keepHint).
	readHints map[resourcelock.Key]readlease.Hint

	// closing is cancelled, with ErrClosed, when Close starts: Acquire
	// calls still waiting end then.
	closing     context.Context
	closeAcquis context.CancelCauseFunc
}

// claim is this client's claim on one key: taken by an Acquire while it
// works on the key, kept while the lock is held, given up when the lock is
// released or lost. Other Acquires of the key by this client wait for free
// to close rather than poll DynamoDB; the first of them makes it.
type claim struct {
	free chan struct{} // guarded by the client's mu; nil until an Acquire waits
	lock *Lock         // while held
	// set is the set whose first key this is, for a set's claims; set
	// once, before the claim is shared.
	set *setHold
}

// New returns a client over cfg.Store as cfg says. It validates cfg (an
// error matching dynalease.ErrInvalid names the field) and sends no request.
func New(cfg Config) (*Client, error) {
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		return nil, invalid("Store", "is nil (dynamodbstore.New makes one on a DynamoDB table)")
	}
	store, err := rows.Open(cfg.Store, "Store")
	if err != nil {
		return nil, err
	}
	if cfg.Fencing && !store.CanFence() {
		return nil, invalid("Fencing", "is set, but %s keeps no fencing generations (dynamodbstore.Config.FenceTable)", store.Describe())
	}
	return newClient(store, c)
}

func newClient(store rows.Store, cfg config) (*Client, error) {
	c := &Client{
		store:  store,
		cfg:    cfg,
		clk:    cfg.clock,
		born:   cfg.clock.Now(),
		log:    cfg.log.WithValues("identity", cfg.identity),
		claims: newClaims(), readHints: map[resourcelock.Key]readlease.Hint{},
	}
	// A lease at a placeholder key: every lease of the client is made
	// from it At a key, sharing its store, identity and options.
	base, err := keylease.New(store, resourcelock.Key{Partition: "-"}, cfg.identity)
	if err != nil {
		return nil, refused("Identity", err)
	}
	c.base = base.WithOptions(c.writeOptions(nil))
	c.closing, c.closeAcquis = context.WithCancelCause(context.Background())
	c.k = rvnlease.New(rvnlease.Settings[*Lock]{
		Clock: cfg.clock, Identity: cfg.identity, RequestTimeout: cfg.requestTimeout, Validity: cfg.validity(),
		Log: c.log, Observe: c.observeRequest, Watches: cfg.cacheSize, Failing: cfg.metrics.Failing,
		RenewEvery: cfg.heartbeat, RenewWorkers: cfg.concurrency, RenewLoop: "heartbeat",
		HoldOf: func(l *Lock) *rvnlease.Hold { return &l.hold }, Expire: (*Lock).expired, TracerProvider: cfg.tracerProvider,
	})
	return c, nil
}

// Identity returns the identity this client writes into its locks.
func (c *Client) Identity() string { return c.cfg.identity }

// isClosed reports whether Close has been called.
func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// claim takes this client's claim on key, waiting while another Acquire of
// this client works on it or holds it. It returns the held lock instead
// when reentrant and the lock allows it.
func (c *Client) claim(ctx context.Context, k resourcelock.Key, a acquireConfig) (*claim, *Lock, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, nil, ErrClosed
		}
		s := c.claims.get(k)
		if s == nil {
			s = &claim{}
			c.claims.put(k, s)
			c.mu.Unlock()
			return s, nil, nil
		}
		if l := s.lock; l != nil && a.reentrant && l.reenter() {
			c.mu.Unlock()
			return nil, l, nil
		}
		if err := c.waitClaimLocked(ctx, k, s, a); err != nil {
			return nil, nil, err
		}
	}
}

// claimAhead returns a claim on key k for an upgrade, without waiting: a
// claim already on k can only be an acquisition of this client that waits
// for the upgrading reader (a writer cannot hold k while the reader
// does), and an upgrade goes ahead of it. The claim is this client's
// claim on k when there was none; otherwise it is kept apart (unclaiming
// it leaves the waiting acquisition's), and the upgraded lock is waited
// for by that acquisition in the table, as for any holder.
func (c *Client) claimAhead(k resourcelock.Key) (*claim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	s := &claim{}
	if c.claims.get(k) == nil {
		c.claims.put(k, s)
	}
	return s, nil
}

// waitClaimLocked waits, with the client's mu held on entry and released,
// until claim s on key k is given up, or fails at once with ErrLocked for
// a call that may not wait (TryAcquire and its kin).
func (c *Client) waitClaimLocked(ctx context.Context, k resourcelock.Key, s *claim, a acquireConfig) error {
	if a.failIfLocked {
		c.mu.Unlock()
		return fmt.Errorf("%w: %q is held by this client", ErrLocked, k)
	}
	if s.free == nil {
		s.free = make(chan struct{})
	}
	free := s.free
	c.mu.Unlock()
	select {
	case <-free:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unclaim gives up the claim s on key.
func (c *Client) unclaim(k resourcelock.Key, s *claim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claims.get(k) == s {
		c.claims.remove(k)
		if s.free != nil {
			close(s.free)
		}
	}
}

// Get reads the lock on key without taking it. The result cannot release
// or heartbeat anybody's lock. Of the acquire options it takes only
// WithSortKeyValue, and refuses the others (an error matching
// dynalease.ErrInvalid). It returns an error matching resourcelock.ErrNotFound
// when there is no row, and ErrClosed, without a request, once the client
// is closed.
func (c *Client) Get(ctx context.Context, key string, opts ...AcquireOption) (Info, error) {
	a, k, err := c.acquireConfig(key, opts)
	if err != nil {
		return Info{}, err
	}
	if c.isClosed() {
		return Info{}, ErrClosed
	}
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"WithData", a.data != nil}, {"WithReplaceData", !a.replaceData}, {"WithDeleteOnRelease", a.deleteOnRelease},
		{"WithAcquireOnlyIfExists", a.onlyIfExists}, {"WithAttributes", a.attributes != nil},
		{"WithReentrant", a.reentrant}, {"WithSessionMonitor", a.monitor != nil}, {"WithRefreshPeriodFor", a.refresh != c.cfg.refresh},
		{"WithAdditionalWait", a.additionalWait != 0}, {"ledger", a.numbers != nil || a.below != nil},
		{"WithUpgradeable", a.upgradeable},
	} {
		if o.set {
			return Info{}, invalid(o.name, "is an acquisition's option; Get takes WithSortKeyValue only")
		}
	}
	started := c.clk.Now()
	it, err := c.store.Get(ctx, k)
	if errors.Is(err, resourcelock.ErrNotFound) {
		c.observeRequest("get", nil, c.clk.Since(started))
	} else {
		c.observeRequest("get", err, c.clk.Since(started))
	}
	if err != nil {
		return Info{}, err
	}
	return infoOf(it, nil), nil
}

// List returns the lock rows whose partition key is partition (the rows of
// one key in a table with a sort key: one query), or every lock row of the
// table when partition is empty (one paginated consistent scan), held or
// not. A row that cannot be decoded is returned with Err set. Once the
// client is closed it returns ErrClosed without a request.
func (c *Client) List(ctx context.Context, partition string) ([]Info, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	var out []Info
	started := c.clk.Now()
	err := c.store.Scan(ctx, partition, func(it rows.Item, err error) error {
		out = append(out, infoOf(it, err))
		return nil
	})
	c.observeRequest("scan", err, c.clk.Since(started))
	return out, err
}

// Close releases every lock the client holds (whatever their hold counts)
// and stops its heartbeats. Acquire and TryAcquire calls still under way
// end promptly with ErrClosed (a row one of them may just have written is
// released, best effort, as when its context ends), and later calls fail
// with ErrClosed.
//
// Releases run in parallel, at most the heartbeat concurrency at once, and
// Close returns by ctx's deadline, if it has one (a cancelled ctx without
// a deadline still releases; see Lock.Release). It returns the errors of
// releases that could not be confirmed, each naming its key, and of those
// not started by the deadline; those locks run out on their own.
func (c *Client) Close(ctx context.Context) error {
	c.closeAcquis(ErrClosed)
	c.mu.Lock()
	c.closed = true
	var held []*Lock
	c.claims.each(func(s *claim) {
		// A set's lock holds several claims, and is listed from its
		// first one only: released once.
		if s.lock != nil && (s.lock.claim == s) {
			held = append(held, s.lock)
		}
	})
	c.mu.Unlock()
	errs := make([]error, len(held))
	sem := make(chan struct{}, c.cfg.concurrency)
	var wg sync.WaitGroup
	for i, l := range held {
		rctx, cancel := timing.KeepDeadline(ctx)
		select {
		case sem <- struct{}{}:
		case <-rctx.Done():
			cancel()
			errs[i] = fmt.Errorf("lock %q: not released before the deadline; it will run out: %w", l.lease.Key(), rctx.Err())
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			defer cancel()
			if err := l.release(rctx, releaseConfig{ended: errClosedRelease}); err != nil && !errors.Is(err, ErrNotHeld) && !errors.Is(err, dynalease.ErrLost) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	if c.k.Renews() {
		// Background heartbeats under way finish by themselves (each is
		// bounded by the request timeout); Close does not wait for them
		// past ctx's deadline.
		stopped := make(chan struct{})
		go func() {
			c.k.Close()
			close(stopped)
		}()
		wctx, cancel := timing.KeepDeadline(ctx)
		defer cancel()
		select {
		case <-stopped:
		case <-wctx.Done():
		}
	}
	return errors.Join(errs...)
}
