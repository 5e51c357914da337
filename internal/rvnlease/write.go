package rvnlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// writer sends the writes of one acquirer or holder and settles each
// answer: a write either landed (the row carries one of the RVNs it tried,
// see Attempts) or it did not, and then the row it found is what the
// caller learns, as if it had been read.
type writer struct {
	cfg      *Config
	port     keylease.Port
	attempts Attempts
}

// answer is what one write or read told the writer.
type answer struct {
	landed   bool      // a write of ours is in the row: item, sent
	earlier  bool      // landed, by a write of an earlier acquirer (Resume)
	item     rows.Item // the row as confirmed or as found
	sent     time.Time // landed: the send time of the write found
	missing  bool      // there is no row
	returned time.Time // when the answer that showed the row returned
	err      error     // nothing was learned: the cause
	cause    error     // a failed write's own error, when settled
}

// failure returns the error of a write that failed for a reason other than
// its condition, even when a read settled it; nil otherwise.
func (a answer) failure() error {
	if a.err != nil {
		return a.err
	}
	if a.cause != nil && !errors.Is(a.cause, resourcelock.ErrConflict) {
		return a.cause
	}
	return nil
}

// write sends rec, conditioned on the RVN cond ("" for a create), through
// send. A failed write is settled by the row its conflict carries, or else
// by a read: a conditional failure may be the SDK's retry of an attempt
// that landed, and any other failure may have landed too.
func (w *writer) write(ctx context.Context, rec resourcelock.Record, cond string, send func(context.Context) (rows.Item, error)) answer {
	sent := w.cfg.Clock.Now()
	w.attempts.Add(rec.RVN, cond, rec.Released, sent)
	rctx, cancel := timing.WithTimeout(ctx, w.cfg.Clock, w.cfg.RequestTimeout)
	it, err := send(rctx)
	cancel()
	op := "update"
	if cond == "" {
		op = "create"
	}
	w.cfg.observe(op, sent, err)
	if err == nil {
		w.attempts.Clear()
		return answer{landed: true, item: it, sent: sent, returned: w.cfg.Clock.Now()}
	}
	if resourcelock.Permanent(err) {
		return answer{err: err}
	}
	conflict := errors.Is(err, resourcelock.ErrConflict)
	var a answer
	if cur, ok := rows.CurrentItem(err); ok {
		a = w.settle(cur, false, w.cfg.Clock.Now())
	} else {
		w.cfg.Log.V(1).Info("write failed; reading the row to settle it", "rvn", rec.RVN, "error", err.Error())
		a = w.read(ctx)
		if a.err != nil {
			a.err = fmt.Errorf("%w (and reading the row back: %w)", err, a.err)
		}
	}
	a.cause = err
	if conflict && a.err == nil && !a.landed {
		// The server answered: this write did not land, or landed and was
		// replaced since. Either way it can no longer matter.
		w.attempts.Settle(rec.RVN)
	}
	return a
}

// read gets the row and settles it against the attempts.
func (w *writer) read(ctx context.Context) answer {
	start := w.cfg.Clock.Now()
	rctx, cancel := timing.WithTimeout(ctx, w.cfg.Clock, w.cfg.RequestTimeout)
	it, err := w.port.Get(rctx)
	cancel()
	if errors.Is(err, resourcelock.ErrNotFound) {
		w.cfg.observe("get", start, nil) // an answer: there is no row
	} else {
		w.cfg.observe("get", start, err)
	}
	returned := w.cfg.Clock.Now()
	switch {
	case errors.Is(err, resourcelock.ErrNotFound):
		return w.settle(rows.Item{}, true, returned)
	case err != nil:
		return answer{err: err}
	}
	return w.settle(it, false, returned)
}

// settle classifies the row it (none when missing), seen in an answer that
// returned at returned.
func (w *writer) settle(it rows.Item, missing bool, returned time.Time) answer {
	if missing {
		w.attempts.Forget("")
		return answer{missing: true, returned: returned}
	}
	if sent, ok := w.attempts.Landed(it.RVN, it.Released); ok {
		w.cfg.Log.V(1).Info("a write whose answer was lost or refused had landed", "rvn", it.RVN)
		earlier := w.attempts.Inherited(it.RVN)
		w.attempts.Clear()
		return answer{landed: true, earlier: earlier, item: it, sent: sent, returned: returned}
	}
	w.attempts.Forget(it.RVN)
	return answer{item: it, returned: returned}
}
