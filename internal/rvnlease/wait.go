package rvnlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Wait is one acquiring call: the one wait loop through which every kind
// of lock acquires (a key, a set of keys, a semaphore's permit, a term of
// leadership). A kind supplies its places, each a keylease.Port
// that folds its rows into one lease and writes what a win writes; the
// loop owns the rest: the polls and the queue, the watches that outlive
// the call, the budget and giving up, settling writes in doubt and passing
// on a hand-over it will not confirm. Each poll reads the places (all in
// one request with Read), takes one that is free, handed to it, or whose
// holder's RVN stayed unchanged for the holder's lease on this clock, and
// otherwise sleeps until the next poll (see wake). A Wait is used once,
// by one goroutine.
type Wait struct {
	// Engine is the acquirers' view of the caller's settings.
	Engine *Config
	// Places are what the call may take: one lease, or a semaphore's
	// slots, of which it takes one.
	Places []Place
	// Read, when set, reads every place's row in one request (a
	// semaphore's slots); a row missing from the map is missing. Without
	// it each place's round reads its own row.
	Read func(ctx context.Context) (map[resourcelock.Key]rows.Item, error)
	// Period is the poll period (a fair waiter's at the queue's head).
	Period time.Duration
	// Rhythm, when positive, is the period at which the holder of a single
	// place is assumed to renew it: the wait then places its reads just
	// after the holder's renewals (see rhythm), never further apart than
	// Period's. Zero: reads a jittered Period apart.
	Rhythm time.Duration
	// Budget says when the wait gives up.
	Budget Budget
	// OnlyIfExists makes a missing row end the wait with an error
	// matching resourcelock.ErrNotFound, instead of a free lease to create.
	OnlyIfExists bool
	// Try makes the call one poll that never waits: TryAcquire.
	Try bool
	// Fence gives a win a fencing generation (Acquirer.Fence) before it
	// is handed out.
	Fence bool
	// Watches, when set, keeps what the wait watched, and its writes in
	// doubt, for the next wait of the same keys.
	Watches *Watches
	// Failing, when set, is told of every poll's failure that waiting may
	// fix under FailKey (nil once a poll fails nothing, and at the win).
	Failing *Failing
	FailKey string
	// OnPoll, when set, is told of every poll (see Poll).
	OnPoll func(Poll)
	// Span, when not nil, counts the wait's polls (see
	// tracing.Acquisition.Polled).
	Span *tracing.Acquisition
	// Loop names the wait's sleeps for the clock ("acquire").
	Loop string
}

// Poll is what one poll of a wait showed, for the wait's OnPoll.
type Poll struct {
	// Won reports that the poll took a place.
	Won bool
	// Known, Free and Holder are what the first place's watch saw: whether
	// it has seen the row, whether the row is free, and its holder.
	Known, Free bool
	Holder      string
	// Err is the poll's failure, one waiting cannot fix included;
	// RoundFailed reports that its round (for one place) failed, even if
	// the poll goes on.
	Err         error
	RoundFailed bool
	// Took is how long the poll took.
	Took time.Duration
}

// Place is one lease a Wait may take.
type Place struct {
	// Key names it in Watches and in the errors of the wait.
	Key resourcelock.Key
	// Lease is its storage, writing what a win writes.
	Lease keylease.Port
	// Fair makes a wait of one place wait in the lease's queue, when it
	// has one (see Acquirer.Queue), as a holder of
	// LeaseDuration.
	Fair          bool
	LeaseDuration time.Duration
	// Stint is how long the holders are expected to keep the lease,
	// taking it back after their own releases, before a release hands it
	// to the queue's head (this client's own stint, as the fleet's is
	// usually one): the head reads faster once it is due (see
	// Acquirer.Queue). Zero for none.
	Stint time.Duration
	// NewRecord returns the record of each write (see NewAcquirer).
	NewRecord func(cur rows.Item) resourcelock.Record
	// Admit, when set, is the kind's rule on the rows it may take (see
	// Acquirer.Admit): a row it refuses ends the wait with its error, as
	// a failure that waiting cannot fix. A row a write of this wait's
	// took is never asked about.
	Admit func(it rows.Item, missing bool) error
	// Plain, when set, is Lease without what a win writes besides its
	// record: the port of the releases of rows the wait never hands out
	// (see Acquirer.Plain).
	Plain keylease.Port
	// Successor: a hand-over to this client's identity is an offer to
	// this wait, without a place in the queue (see Acquirer.Successor).
	Successor bool
	// Abandoning, when set, is called when the wait gives up with writes
	// on the place in doubt, before they are released (Acquirer.Abandon):
	// one may have landed, and its release frees the row. A kind whose
	// write takes something away from a hold of its own (an upgrade, the
	// upgrading reader's entry) ends that hold here, before the row can be
	// taken by anyone.
	Abandoning func()
	// Claim, when set, is called before a write on the place; false
	// passes the place over in this poll. Unclaim is called after a
	// round that did not win it.
	Claim   func() bool
	Unclaim func()
}

// Budget says how long a wait lasts while its places stay held.
type Budget struct {
	// Extra is added to the holders' lease: the caller's additional wait.
	Extra time.Duration
	// OwnLease is the caller's own lease. A wait whose requests keep
	// failing before any holder was seen gives up after OwnLease plus
	// Extra from its start; one whose takeover (or confirmation, or
	// create) keeps failing once the lease may be taken gives up once the
	// failures have lasted as long.
	OwnLease time.Duration
	// Forever: never give up; only ctx or a failure that waiting cannot
	// fix ends the wait (a candidate for leadership).
	Forever bool
	// Restart starts the budget again whenever a place changes hands (a
	// semaphore's slot: it may come free again soon). A fair waiter with a
	// place in the queue restarts it likewise, on its one place.
	Restart bool
}

// Won is the place a wait took, as its confirmed write left it.
type Won struct {
	Place int
	// Item is the row as confirmed (fenced, with Wait.Fence); Sent the
	// local time just before the confirmed write was sent, from which the
	// hold's validity counts.
	Item rows.Item
	Sent time.Time
	// StintStart is when the winner's stint on the place began (see
	// Result.StintStart), for Hold.ReleaseQueued.
	StintStart time.Time
}

// HeldError is the end of a wait that found its places held: Try or
// at once, or a wait whose budget ran out.
type HeldError struct {
	Holder string        // the holder of the first place, as last seen ("" when it was taken meanwhile)
	Waited time.Duration // zero for Try
	Last   error         // the last failure of a request meanwhile, if any
}

func (e *HeldError) Error() string {
	msg := "is held"
	if e.Holder != "" {
		msg = fmt.Sprintf("is held by %q", e.Holder)
	} else if e.Waited == 0 {
		msg = "was taken meanwhile"
	}
	if e.Last != nil {
		msg += fmt.Sprintf(" (and the last request failed: %v)", e.Last)
	}
	if e.Waited > 0 {
		msg += fmt.Sprintf(" after waiting %v", e.Waited)
	}
	return msg
}

func (e *HeldError) Unwrap() error { return e.Last }

// waiting is the state of one Run: what the budget counts from, and the
// failures of the polls.
type waiting struct {
	Wait
	at           []placeState // one per place
	start        time.Time
	deadline     time.Time // give up after this; zero until a holder is seen
	budgetFrom   time.Time
	lastErr      error     // the last poll's failure, nil after a poll without one
	failingSince time.Time // when the polls started failing; zero with lastErr nil
	// fenceFailed: the last poll won a place but could not fence it (the
	// row was released): a failing write, to be tried again within the
	// grace of one.
	fenceFailed bool
	// rh times the reads of a single place by its holder's renewals
	// (Wait.Rhythm); nil without one.
	rh *rhythm
}

// placeState is what a wait keeps of one place: its acquirer, its holder
// at the last poll that saw it held ("" free), and whether the last poll
// passed it over, its claim failing (this client works on it in another
// call): such a place is neither due nor waited for until a later poll
// claims it.
type placeState struct {
	*Acquirer
	holder       string
	acquisitions int64 // the row's acquisitions at that poll
	skipped      bool
}

// Run waits until a place is taken, and returns it; or until ctx ends
// (ctx's error), the budget runs out (a *HeldError when the places stayed
// held, or the failure that kept the wait from taking a place), or a
// failure that waiting cannot fix (see resourcelock.Permanent) ends it.
// Whatever the end, the watches and the writes still in doubt are kept in
// Watches, a wait that gives up leaves its queue (passing on a hand-over
// to it), and a row that a write in doubt may have left is released.
func (w *Wait) Run(ctx context.Context) (Won, error) {
	s := &waiting{Wait: *w, start: w.Engine.Clock.Now(), at: make([]placeState, len(w.Places))}
	w.begin(s)
	won := -1
	defer func() { s.remember(ctx, won) }()
	for {
		if err := ctx.Err(); err != nil {
			return Won{}, err
		}
		started := w.Engine.Clock.Now()
		res, i, err := s.poll(ctx)
		if w.OnPoll != nil {
			o := s.at[0].Obs
			w.OnPoll(Poll{Won: res.Found == Ours, Known: o.Known, Free: o.Free(), Holder: o.Holder,
				Err: err, RoundFailed: res.Err != nil, Took: w.Engine.Clock.Since(started)})
		}
		s.countPoll()
		if i >= 0 {
			// The other places' writes in doubt are released before the
			// win is handed out (one of them may have landed: an orphan
			// slot), and that takes requests: a win whose validity passed
			// meanwhile is renewed first, at once, in the next poll, as a
			// win confirmed late is.
			s.abandonOthers(ctx, i)
			if !w.Engine.Clock.Now().Before(res.Sent.Add(w.Engine.Validity)) {
				s.at[i].late = res.Item
				continue
			}
			won = i
			s.note(nil)
			return Won{Place: i, Item: res.Item, Sent: res.Sent, StintStart: res.StintStart}, nil
		}
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return Won{}, ctxErr
			}
			return Won{}, err
		}
		now := w.Engine.Clock.Now()
		s.paceRhythm(res.Err, started, now)
		if err := s.settle(res.Err, now); err != nil {
			return Won{}, err
		}
		wait, err := s.next(now)
		if err != nil {
			return Won{}, err
		}
		if err := timing.Sleep(ctx, w.Engine.Clock, wait, w.Loop); err != nil {
			return Won{}, err
		}
	}
}

// begin sets s up for a wait about to run: an acquirer per place
// (queued when the place is fair and alone, resuming what Watches kept
// of it), and the rhythm of a lone watched place.
func (w *Wait) begin(s *waiting) {
	for i, p := range w.Places {
		a := NewAcquirer(w.Engine, p.Lease, p.NewRecord)
		a.OnlyIfExists, a.Stint, a.Admit, a.Plain, a.Successor = w.OnlyIfExists, p.Stint, p.Admit, p.Plain, p.Successor
		if p.Fair && !w.Try && len(w.Places) == 1 {
			a.Queue(p.LeaseDuration, w.Period)
			w.Engine.Waits.add(a.q.me.Ticket)
		}
		if w.Watches != nil {
			obs, doubt, _ := w.Watches.Get(p.Key)
			a.Resume(obs, doubt)
		}
		s.at[i].Acquirer = a
	}
	if w.Rhythm > 0 && !w.Try && len(w.Places) == 1 && w.Read == nil {
		s.rh = newRhythm(w.Rhythm, w.Engine.Clock)
	}
}

// countPoll counts a poll into the wait's span, with the holder its
// first place's watch saw.
func (s *waiting) countPoll() {
	if s.Span == nil {
		return
	}
	held := ""
	if o := s.at[0].Obs; o.Known && !o.Free() {
		held = o.Holder
	}
	s.Span.Polled(held)
}

// paceRhythm tells the wait's rhythm (when it has one) what the poll sent
// at started and answered by now showed: the row another holds, or a
// failure (err).
func (s *waiting) paceRhythm(err error, started, now time.Time) {
	switch {
	case s.rh == nil:
	case err == nil:
		o := s.at[0].Obs
		s.rh.saw(started, now, o.RVN, o.Holder, o.Known && !o.Free() && o.Holder != s.Engine.Identity)
	default:
		s.rh.failed(started)
	}
}

// poll makes one attempt over the places: it reads them (Read), then runs
// a round on each that may be taken (every place without Read), in a
// random order so that waiters spread over a semaphore's free slots. It
// returns the winning place's index and result; otherwise -1 and a result
// whose Err is the poll's failure (for one place, its round's result),
// or an error that waiting cannot fix.
func (s *waiting) poll(ctx context.Context) (Result, int, error) {
	var failure error
	if s.Read != nil {
		rows, err := s.readAll(ctx)
		if err != nil {
			if resourcelock.Permanent(err) {
				return Result{}, -1, err
			}
			return Result{Found: Unknown, Err: err}, -1, nil
		}
		returned := s.Engine.Clock.Now()
		for i, p := range s.Places {
			it, ok := rows[p.Key]
			s.at[i].Feed(it, !ok, returned)
		}
	}
	var last Result
	for i := range s.at {
		s.at[i].skipped = false
	}
	s.fenceFailed = false
	for _, i := range s.candidates() {
		p := s.Places[i]
		if p.Claim != nil && !p.Claim() {
			s.at[i].skipped = true
			continue
		}
		res, err := s.at[i].Round(ctx)
		if err == nil && res.Found == Ours && s.Fence {
			res, err = s.at[i].Fence(ctx, res)
			if errors.Is(err, errFencedLate) {
				// Fenced after the win's validity passed (the fence's
				// answer came late): renewed at once, as a win confirmed
				// late is, rather than handed out over.
				res, err = s.at[i].Round(ctx)
			}
			if err != nil && !resourcelock.Permanent(err) {
				// Released by Fence; the next poll may take it again.
				res, err, s.fenceFailed = Result{Found: Unknown, Err: err}, nil, true
			}
		}
		if err == nil && res.Found == Ours {
			return res, i, nil
		}
		if p.Unclaim != nil {
			p.Unclaim()
		}
		if err != nil {
			return res, -1, err
		}
		if res.Err != nil {
			failure = res.Err
		}
		last = res
	}
	if len(s.Places) > 1 || s.Read != nil {
		last = Result{Found: Others, Err: failure}
	}
	return last, -1, nil
}

// readAll reads every place in one request, bounded by the request
// timeout.
func (s *waiting) readAll(ctx context.Context) (map[resourcelock.Key]rows.Item, error) {
	rctx, cancel := timing.WithTimeout(ctx, s.Engine.Clock, s.Engine.RequestTimeout)
	defer cancel()
	start := s.Engine.Clock.Now()
	rows, err := s.Read(rctx)
	s.Engine.observe("get", start, err)
	return rows, err
}

// candidates returns the places a poll runs a round on: without Read, all
// of them (each round reads); with Read, those that may be written now
// (free, a lease to take over or a hand-over to confirm, or a write of
// ours found landed), from a random one on.
func (s *waiting) candidates() []int {
	if s.Read == nil && len(s.at) == 1 {
		return firstPlace
	}
	var out []int
	for i, a := range s.at {
		if s.Read == nil || a.Ready() {
			out = append(out, i)
		}
	}
	if n := len(out); n > 1 {
		off := timing.IntN(s.Engine.Clock, n)
		out = append(out[off:], out[:off]...)
	}
	return out
}

// firstPlace is the candidates of a wait of one place (never written).
var firstPlace = []int{0}

// note tells Failing of a poll's outcome.
func (s *waiting) note(err error) {
	if s.Failing != nil {
		s.Failing.Note(s.FailKey, err)
	}
}
