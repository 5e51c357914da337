package candidacy

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Port is an election's lease as the kernel sees it: the row's
// lease, whose every answer also shows the row's candidates to the
// elector's Watch of them, and whose reads, for a candidate that stands,
// write its entry instead (Store.Stand answers with the row as a read
// does, so a standing candidate's poll costs one request, a write). It is
// the one place where the election meets the candidates: the kernel
// campaigns, holds and releases through it as through any lease.
type Port struct {
	keylease.Port
	store rows.Store
	key   resourcelock.Key
	clk   timing.Clock
	cands Watch          // the row's candidates, as this port's answers show them
	me    rows.Candidate // this candidate's entry, without its RVN; zero when it does not stand
	drop  time.Duration  // how long an entry stays unchanged before a stand drops it
	fresh time.Duration  // how recent the last answer must be for Stale to judge
	// every is the least time between two stands: the polls in between
	// (a standby reads in the leader's rhythm, about 2.3 times a
	// RetryPeriod) are reads.
	every time.Duration

	// mu guards lastStand, the send time of the last stand that landed:
	// the campaign's loop polls, and a leader's reads (a renewal settled
	// by a read, a Guard's loss read) may run beside each other.
	mu        sync.Mutex
	lastStand time.Time
}

// Lease returns the lease of an election at key of store (one made by
// dynamodbstore.New or memorystore.New), written as identity. It sends no
// request; a store made otherwise, or a key or identity beyond their
// limits, is refused with a *dynalease.InvalidError naming Config's
// field: Store, Identity or Name.
func Lease(store resourcelock.Store, key resourcelock.Key, identity string) (*keylease.Lease, error) {
	r, err := rows.Open(store, "Store")
	if err != nil {
		return nil, err
	}
	l, err := keylease.New(r, key, identity)
	switch {
	case err == nil:
		return l, nil
	case record.CheckIdentity(identity) != nil:
		return nil, &dynalease.InvalidError{Field: "Identity", Err: err}
	default:
		return nil, &dynalease.InvalidError{Field: "Name", Err: err}
	}
}

// NewPort returns the lease, whose answers show its row's candidates to
// the port's Candidates, or nil for a lease of another kind than Lease's (an elector's
// resourcelock.Interface, which has no candidates), for a candidate of identity that stands with priority when
// stands (a fresh ticket: its entry's, for this Port's life). A stand
// drops entries unchanged for drop, judged only on an answer newer than
// fresh; a standing candidate stands at most once per every, and reads
// between.
func NewPort(lease keylease.Port, clk timing.Clock, identity string, priority int64, stands bool, drop, fresh, every time.Duration) *Port {
	l, ok := lease.(*keylease.Lease)
	if !ok {
		return nil
	}
	p := &Port{Port: l, store: l.Store(), key: l.Key(), clk: clk, drop: drop, fresh: fresh, every: every}
	if stands {
		p.me = rows.Candidate{Ticket: uuid.NewString(), Identity: identity, Priority: priority}
	}
	return p
}

// noCandidates is the watch of a port that is not one: never fed.
var noCandidates Watch

// Candidates returns the watch of the row's candidates that p's answers
// feed; on a nil p (an elector whose lease is not a store's), a watch
// that sees none.
func (p *Port) Candidates() *Watch {
	if p == nil {
		return &noCandidates
	}
	return &p.cands
}

// Ticket returns this candidate's ticket, "" when it does not stand.
func (p *Port) Ticket() string { return p.me.Ticket }

// standDue reports whether a poll sent at sent stands: this candidate
// stands, and its last stand landed at least every before.
func (p *Port) standDue(sent time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.me.Ticket != "" && sent.Sub(p.lastStand) >= p.every
}

// stood notes a stand sent at sent that landed.
func (p *Port) stood(sent time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sent.After(p.lastStand) {
		p.lastStand = sent
	}
}

// Key returns the row's key.
func (p *Port) Key() resourcelock.Key { return p.key }

// Get reads the row; a standing candidate, at most once per every, writes
// its entry with a fresh RVN instead, dropping entries long unchanged, and
// reads the row from the answer. A stand refused because the row is full of entries (the answer
// carries the row) drops the stale ones it shows and stands again, or, with
// none stale, serves as the read.
func (p *Port) Get(ctx context.Context) (rows.Item, error) {
	sent := p.clk.Now()
	if !p.standDue(sent) {
		it, err := p.Port.Get(ctx)
		return p.saw(sent, it, err)
	}
	it, err := p.store.Stand(ctx, p.key, p.entry(), p.cands.Stale(sent, p.drop, p.fresh, p.me.Ticket, p.me.Identity))
	if err == nil {
		p.stood(sent)
	}
	if !errors.Is(err, resourcelock.ErrConflict) {
		return p.saw(sent, it, err)
	}
	full, found := rows.CurrentItem(err)
	if !found {
		sent = p.clk.Now()
		it, err = p.Port.Get(ctx)
		return p.saw(sent, it, err)
	}
	p.cands.See(full, sent)
	stale := p.cands.Stale(p.clk.Now(), p.drop, p.fresh, p.me.Ticket, p.me.Identity)
	if len(stale) == 0 {
		return full, nil // full of live entries: the refusal served as the read
	}
	if _, err := p.store.Stand(ctx, p.key, rows.Candidate{}, stale); err != nil {
		return rows.Item{}, err
	}
	sent = p.clk.Now()
	it, err = p.store.Stand(ctx, p.key, p.entry(), nil)
	if err == nil {
		p.stood(sent)
	}
	if full, found := rows.CurrentItem(err); found && errors.Is(err, resourcelock.ErrConflict) {
		p.cands.See(full, sent)
		return full, nil
	}
	return p.saw(sent, it, err)
}

// entry returns this candidate's entry with a fresh RVN.
func (p *Port) entry() rows.Candidate {
	c := p.me
	c.RVN = uuid.NewString()
	return c
}

// Create is the lease's Create; its answer shows the candidates.
func (p *Port) Create(ctx context.Context, rec resourcelock.Record) (rows.Item, error) {
	sent := p.clk.Now()
	it, err := p.Port.Create(ctx, rec)
	return p.saw(sent, it, err)
}

// Update is the lease's Update; its answer shows the candidates, and a
// standing candidate drops the entries of its identity with another
// ticket that it shows (see dropEarlier).
func (p *Port) Update(ctx context.Context, expect resourcelock.Precondition, rec resourcelock.Record) (rows.Item, error) {
	sent := p.clk.Now()
	it, err := p.Port.Update(ctx, expect, rec)
	if err == nil {
		p.dropEarlier(ctx, it)
	}
	return p.saw(sent, it, err)
}

// dropEarlier removes, with one stand of no entry, the entries of this
// candidate's identity with another ticket that the row it shows: an
// earlier process of its identity that crashed before it withdrew. A
// leader does not stand, so this is how the entries of its identity are
// dropped while it leads (a watch cannot always tell which of them is the
// leader's: see Watch.Stale). Best effort: the next renewal
// tries again.
func (p *Port) dropEarlier(ctx context.Context, it rows.Item) {
	if p.me.Ticket == "" {
		return
	}
	var drop []string
	for _, c := range it.Candidates {
		if c.Identity == p.me.Identity && c.Ticket != p.me.Ticket {
			drop = append(drop, c.Ticket)
		}
	}
	if len(drop) > 0 {
		_, _ = p.store.Stand(ctx, p.key, rows.Candidate{}, drop)
	}
}

// saw shows the row of an answer to a request sent at sent to the watch
// of the candidates, and returns the answer.
func (p *Port) saw(sent time.Time, it rows.Item, err error) (rows.Item, error) {
	if err == nil {
		p.cands.See(it, sent)
	}
	return it, err
}

// Withdraw removes this candidate's entry from the row, when it stands:
// a candidate that stops campaigning is no longer listed. Best effort,
// one request bounded by timeout; a candidate that cannot withdraw stops
// renewing its entry, which then stops counting as live.
func (p *Port) Withdraw(ctx context.Context, timeout time.Duration) error {
	if p.me.Ticket == "" {
		return nil
	}
	rctx, cancel := timing.WithTimeout(context.WithoutCancel(ctx), p.clk, timeout)
	defer cancel()
	_, err := p.store.Stand(rctx, p.key, rows.Candidate{}, []string{p.me.Ticket})
	if errors.Is(err, resourcelock.ErrNotFound) {
		return nil
	}
	return err
}
