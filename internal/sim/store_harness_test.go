package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Faults are the plan's rates and sizes of faults, drawn by the seed while
// the history is not calm.
type Faults struct {
	// Latency is the most a request takes to land (uniform from zero);
	// its answer returns when it lands.
	Latency time.Duration
	// Instant is the chance that a request lands at once: the scheduler
	// answers it at the instant it was sent (a clock that does not move
	// during a request, as a fake clock over a memory store).
	Instant float64
	// Slow is the chance that a request takes up to SlowLatency instead,
	// past a request timeout: a write that lands after its caller gave up
	// on it (or is dropped: LandLate).
	Slow        float64
	SlowLatency time.Duration
	LandLate    float64
	// Lost is the chance that a request lands and its answer is lost;
	// Refused that it fails without landing (a timeout before it was
	// applied); Throttled that the store refuses it (a retryable error).
	Lost, Refused, Throttled float64
}

// The errors the simulated store answers with: none is a conditional
// failure, so the library settles each by reading, as it must a timeout.
var (
	errLost      = errors.New("sim: the request landed and its answer was lost")
	errRefused   = errors.New("sim: the request timed out before it was applied")
	errThrottled = errors.New("sim: throttled")
	errEnded     = errors.New("sim: the history ended")
)

// fate is what happens to one request.
type fate int

const (
	fateOK fate = iota
	fateLost
	fateRefused
	fateThrottled
)

// send is a request sent since the last step, planned at the next (its
// latency and fate drawn in an order set by sortKey).
type send struct {
	p       *Process
	r       *request
	apply   func() error
	sortKey string
}

// request is one call of a process's store, from its send to its answer.
type request struct {
	done      chan struct{}
	err       error
	abandoned bool // its caller stopped waiting (its context ended)
	served    bool
	what      string // op and key
}

// request sends op of p to the store: apply runs against the memory store
// when the request lands, at a time and with a fate the seed picks. It
// returns apply's error, the fault's, or ctx's when ctx ends first (the
// request may still land later).
func (w *World) request(ctx context.Context, p *Process, op, key string, apply func() error) error {
	r := &request{done: make(chan struct{}, 1), what: op + " " + key}
	w.mu.Lock()
	if w.ending {
		w.mu.Unlock()
		return errEnded
	}
	p.requests++
	w.hist.requestLocked(p, op, key)
	w.sends = append(w.sends, &send{p: p, r: r, apply: apply, sortKey: p.Name + "\x00" + r.what})
	w.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		w.mu.Lock()
		served := r.served
		r.abandoned = !served
		w.mu.Unlock()
		if served {
			<-r.done
			return r.err
		}
		return ctx.Err()
	}
}

// planSendLocked draws s's latency and fate, and schedules its landing.
func (w *World) planSendLocked(s *send) {
	latency, f, lands := w.planLocked()
	w.atLocked(&event{what: "land " + s.p.Name + " " + s.r.what, fire: func() { w.landLocked(s.p, s.r, s.apply, f, lands) }}, w.now.Add(latency))
}

// planLocked picks a request's latency and fate, and whether it lands
// once its caller has given up on it.
func (w *World) planLocked() (time.Duration, fate, bool) {
	f := w.faults
	if w.calm || w.ending {
		f = Faults{Latency: f.Latency, Instant: f.Instant}
	}
	latency := time.Duration(0)
	if f.Latency > 0 && w.rng.Float64() >= f.Instant {
		latency = time.Duration(w.rng.Int64N(int64(f.Latency) + 1))
	}
	if f.Slow > 0 && w.rng.Float64() < f.Slow {
		latency = time.Duration(w.rng.Int64N(int64(f.SlowLatency) + 1))
	}
	lands := w.rng.Float64() < f.LandLate
	x := w.rng.Float64()
	switch {
	case x < f.Lost:
		return latency, fateLost, lands
	case x < f.Lost+f.Refused:
		return latency, fateRefused, lands
	case x < f.Lost+f.Refused+f.Throttled:
		return latency, fateThrottled, lands
	}
	return latency, fateOK, lands
}

// landLocked lands r: it applies it (unless its fate or its caller's
// giving up says otherwise) and answers it, when its process is not
// paused (then when it resumes).
func (w *World) landLocked(p *Process, r *request, apply func() error, f fate, landsLate bool) {
	r.served = true
	if r.abandoned {
		if landsLate && !w.ending {
			_ = apply()
		}
		return
	}
	switch {
	case w.ending:
		r.err = errEnded
	case f == fateOK:
		r.err = apply()
	case f == fateLost:
		_ = apply()
		r.err = errLost
	case f == fateRefused:
		r.err = errRefused
	case f == fateThrottled:
		r.err = errThrottled
	}
	answer := &event{owner: p, what: "answer " + r.what, fire: func() { r.done <- struct{}{} }}
	w.atLocked(answer, w.now)
}

// Store is a process's view of the world's store: every call is a request
// through the scheduler. It implements rows.Store.
type Store struct {
	w *World
	p *Process
}

var _ rows.Store = (*Store)(nil)

// Store returns p's view of the world's store.
func (p *Process) Store(w *World) *Store { return &Store{w: w, p: p} }

func (s *Store) do(ctx context.Context, op string, key fmt.Stringer, apply func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := ""
	if key != nil {
		k = key.String()
	}
	return s.w.request(ctx, s.p, op, k, func() error { return apply(context.Background()) })
}

func (s *Store) Get(ctx context.Context, key resourcelock.Key) (it rows.Item, err error) {
	err = s.do(ctx, "get", key, func(c context.Context) (e error) { it, e = rows.MustOpen(s.w.mem).Get(c, key); return })
	return
}

func (s *Store) Create(ctx context.Context, key resourcelock.Key, rec resourcelock.Record, opts rows.WriteOptions) (it rows.Item, err error) {
	err = s.do(ctx, "create", key, func(c context.Context) (e error) {
		it, e = rows.MustOpen(s.w.mem).Create(c, key, rec, opts)
		s.w.hist.wroteLocked(key, it, e)
		return
	})
	return
}

func (s *Store) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts rows.WriteOptions) (it rows.Item, err error) {
	err = s.do(ctx, "update", key, func(c context.Context) (e error) {
		it, e = rows.MustOpen(s.w.mem).Update(c, key, expect, rec, opts)
		s.w.hist.wroteLocked(key, it, e)
		return
	})
	return
}

func (s *Store) Remove(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition) error {
	return s.do(ctx, "remove", key, func(c context.Context) error { return rows.MustOpen(s.w.mem).Remove(c, key, expect) })
}

func (s *Store) Scan(ctx context.Context, partition string, fn func(rows.Item, error) error) error {
	var found []rows.Item
	var errs []error
	err := s.do(ctx, "scan", stringer(partition), func(c context.Context) error {
		return rows.MustOpen(s.w.mem).Scan(c, partition, func(it rows.Item, err error) error {
			found, errs = append(found, it), append(errs, err)
			return nil
		})
	})
	if err != nil {
		return err
	}
	for i := range found {
		if err := fn(found[i], errs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) Join(ctx context.Context, key resourcelock.Key, wt rows.Waiter) (it rows.Item, err error) {
	err = s.do(ctx, "join", key, func(c context.Context) (e error) { it, e = rows.MustOpen(s.w.mem).Join(c, key, wt); return })
	return
}

func (s *Store) Leave(ctx context.Context, key resourcelock.Key, ticket string, index int) (it rows.Item, err error) {
	err = s.do(ctx, "leave", key, func(c context.Context) (e error) { it, e = rows.MustOpen(s.w.mem).Leave(c, key, ticket, index); return })
	return
}

func (s *Store) GetMany(ctx context.Context, keys []resourcelock.Key) (m map[resourcelock.Key]rows.Item, err error) {
	err = s.do(ctx, "getmany", stringer(fmt.Sprint(keys)), func(c context.Context) (e error) { m, e = rows.MustOpen(s.w.mem).GetMany(c, keys); return })
	return
}

func (s *Store) WriteMany(ctx context.Context, writes []rows.Write) error {
	return s.do(ctx, "writemany", stringer(fmt.Sprint(len(writes))), func(c context.Context) error {
		err := rows.MustOpen(s.w.mem).WriteMany(c, writes)
		if err == nil {
			for _, wr := range writes {
				if it, ok := rows.MustRaw(s.w.mem).Item(wr.Key); ok {
					s.w.hist.wroteLocked(wr.Key, it, nil)
				}
			}
		}
		return err
	})
}

func (s *Store) MaxMany() int { return rows.MustOpen(s.w.mem).MaxMany() }

func (s *Store) Fence(ctx context.Context, key resourcelock.Key, holder, acquisitionID string) (it rows.Item, err error) {
	err = s.do(ctx, "fence", key, func(c context.Context) (e error) {
		it, e = rows.MustOpen(s.w.mem).Fence(c, key, holder, acquisitionID)
		return
	})
	return
}

func (s *Store) FenceMany(ctx context.Context, keys []resourcelock.Key, holder, acquisitionID string) (g int64, err error) {
	err = s.do(ctx, "fencemany", stringer(fmt.Sprint(keys)), func(c context.Context) (e error) {
		g, e = rows.MustOpen(s.w.mem).FenceMany(c, keys, holder, acquisitionID)
		return
	})
	return
}

func (s *Store) Share(ctx context.Context, key resourcelock.Key, sh rows.Share) (it rows.Item, err error) {
	err = s.do(ctx, "share", key, func(c context.Context) (e error) { it, e = rows.MustOpen(s.w.mem).Share(c, key, sh); return })
	return
}

func (s *Store) Stand(ctx context.Context, key resourcelock.Key, cand rows.Candidate, drop []string) (it rows.Item, err error) {
	err = s.do(ctx, "stand", key, func(c context.Context) (e error) { it, e = rows.MustOpen(s.w.mem).Stand(c, key, cand, drop); return })
	return
}

func (s *Store) CanFence() bool   { return true }
func (s *Store) Describe() string { return "sim:" + s.p.Name }

// stringer is a string as a fmt.Stringer.
type stringer string

func (s stringer) String() string { return string(s) }

// Guarded returns a guarded write of the process's: a write to the
// simulated resource named resource, committed (and recorded) only while
// the holding still holds every one of its rows, as a store's guarded
// write is; it fails with resourcelock.ErrGuardLost otherwise.
func (s *Store) Guarded(resource string) resourcelock.Guarded {
	return func(ctx context.Context, h resourcelock.Holding) error {
		return s.do(ctx, "guard", stringer(resource), func(context.Context) error {
			for _, k := range h.Keys {
				it, ok := rows.MustRaw(s.w.mem).Item(k)
				if !ok || it.HolderIdentity != h.HolderIdentity || it.AcquisitionID != h.AcquisitionID || it.Released {
					return resourcelock.ErrGuardLost
				}
			}
			s.w.hist.guardedLocked(s.p, resource, h)
			return nil
		})
	}
}
