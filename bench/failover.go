package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/internal/timing"
)

// failoverKind is row 4's result for one kind of leader exit.
type failoverKind struct {
	Trials    int       `json:"trials"`
	Completed int       `json:"completed"`
	Measured  string    `json:"measured"`
	PerTrial  []float64 `json:"failover_ms"`
	MedianMs  float64   `json:"median_ms"`
	MaxMs     float64   `json:"max_ms"`
	MinMs     float64   `json:"min_ms"`
	// FromEventMs is the time from the crash (the old leader's writes
	// start hanging) or from the cancel of the old leader's Run to the
	// new leader's OnStartedLeading: informational.
	FromEventMs        []float64 `json:"from_crash_or_cancel_ms"`
	BoundFormula       string    `json:"bound_formula"`
	BoundRTTP50Ms      float64   `json:"bound_ms_with_rtt_p50"`
	BoundRTTP99Ms      float64   `json:"bound_ms_with_rtt_p99"`
	WithinBoundP99     int       `json:"trials_within_bound_with_rtt_p99"`
	WithinBoundP50     int       `json:"trials_within_bound_with_rtt_p50"`
	MinGapMs           float64   `json:"min_gap_old_term_end_to_new_start_ms"`
	OverlappingTerms   int       `json:"overlapping_terms"`
	FailedTrials       []string  `json:"failed_trials,omitempty"`
	oldEndToNewStartMs []time.Duration
	per                []time.Duration
}

type failoverResult struct {
	LeaseS         float64      `json:"lease_duration_s"`
	RenewDeadlineS float64      `json:"renew_deadline_s"`
	RetryPeriodS   float64      `json:"retry_period_s"`
	Candidates     int          `json:"candidates"`
	RTTP50Ms       float64      `json:"rtt_p50_ms"`
	RTTP99Ms       float64      `json:"rtt_p99_ms"`
	RTTSamples     int          `json:"rtt_samples"`
	Crash          failoverKind `json:"crash"`
	Graceful       failoverKind `json:"graceful"`
	// StandbyReadsPerPeriod is the standbys' reads (GetItem attempts) per
	// standby and RetryPeriod while the leader lived: from the standbys'
	// start to the crash or the cancel, over every trial.
	StandbyReadsPerPeriod float64 `json:"standby_reads_per_retry_period"`
	standbyReads          int64
	standbyTime           time.Duration
}

type leaderEvent struct {
	cd *candidate
	at time.Time
}

// rowFailover is row 4: failover after a crash and after a graceful
// release, three candidates per trial.
func (b *bench) rowFailover(ctx context.Context) error {
	table, err := b.table(ctx, "failover")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	res := &failoverResult{
		LeaseS: electLease.Seconds(), RenewDeadlineS: electRenew.Seconds(), RetryPeriodS: electRetry.Seconds(), Candidates: 3,
	}
	b.res.Failover = res

	// The first leader's client can be cut off: its UpdateItem requests
	// then hang (until each request's timeout), so it stops renewing
	// without releasing, as a crashed or partitioned leader does. The
	// standbys' clients log their attempts for the round-trip estimate.
	ft := faulthttp.New(b.clients.baseTransport())
	ctrA, ctrS := newCounter(), newCounter()
	ctrS.setLog(true)
	clientA := b.clients.client(ctrA, ft)
	clientS := b.clients.client(ctrS, nil)

	trial := func(kind string, i int, crash bool) (failover, fromEvent, gap time.Duration, err error) {
		name := fmt.Sprintf("fo-%s-%s-%d", kind, b.runID, i)
		old, err := startCandidate(ctx, clientA, ctrA, table, name, "old-"+kind, nil)
		if err != nil {
			return 0, 0, 0, err
		}
		defer old.stop()
		select {
		case <-old.started:
		case <-time.After(electPatience):
			return 0, 0, 0, errors.New("the first candidate did not become leader")
		}
		events := make(chan leaderEvent, 2)
		onStart := func(cd *candidate, at time.Time) { events <- leaderEvent{cd, at} }
		for _, id := range []string{"standby-1", "standby-2"} {
			cd, err := startCandidate(ctx, clientS, ctrS, table, name, id, onStart)
			if err != nil {
				return 0, 0, 0, err
			}
			defer cd.stop()
		}
		// Let the standbys settle into polling, and exit at a random phase
		// of the leader's renewal period.
		standbysFrom, readsFrom := time.Now(), ctrS.snapshot()
		time.Sleep(time.Second + rand.N(electRetry))
		eventAt := time.Now()
		res.standbyReads += ctrS.since(readsFrom).attempts["GetItem"]
		res.standbyTime += 2 * eventAt.Sub(standbysFrom)
		if crash {
			h := ft.Add(faulthttp.Rule{Op: "UpdateItem", Fault: faulthttp.Delay(time.Hour)})
			defer h.Remove()
		} else {
			old.cancel()
		}
		var ev leaderEvent
		select {
		case ev = <-events:
		case <-time.After(electPatience):
			return 0, 0, 0, fmt.Errorf("no standby became leader within %v", electPatience)
		}
		ok, runErr := old.waitDone(electPatience)
		if !ok {
			return 0, 0, 0, errors.New("the old leader's Run did not return")
		}
		var from time.Time
		if crash {
			if !errors.Is(runErr, dynalease.ErrLost) {
				return 0, 0, 0, fmt.Errorf("the old leader's Run returned %v, want dynalease.ErrLost", runErr)
			}
			last, ok := old.lastConfirmedSend()
			if !ok {
				return 0, 0, 0, errors.New("no confirmed send of the old leader in its log")
			}
			from = last
		} else {
			rel := old.sent("released the lease")
			if len(rel) != 1 {
				return 0, 0, 0, fmt.Errorf("the old leader logged %d releases, want 1", len(rel))
			}
			from = rel[0]
		}
		_, oldEnd, _ := old.times()
		return ev.at.Sub(from), ev.at.Sub(eventAt), ev.at.Sub(oldEnd), nil
	}

	runKind := func(k *failoverKind, kind string, n int, crash bool) {
		k.Trials = n
		var per, from []time.Duration
		for i := 0; i < n && ctx.Err() == nil; i++ {
			f, e, gap, err := trial(kind, i, crash)
			if err != nil {
				k.FailedTrials = append(k.FailedTrials, fmt.Sprintf("trial %d: %v", i+1, err))
				b.progress("    %s trial %d/%d FAILED: %v", kind, i+1, n, err)
				continue
			}
			per = append(per, f)
			from = append(from, e)
			k.oldEndToNewStartMs = append(k.oldEndToNewStartMs, gap)
			if gap <= 0 {
				k.OverlappingTerms++
			}
			b.progress("    %s trial %d/%d: %.0f ms", kind, i+1, n, ms(f))
		}
		k.per = per
		k.Completed = len(per)
		k.PerTrial = msList(per)
		k.FromEventMs = msList(from)
		k.MedianMs, k.MaxMs, k.MinMs = ms(median(per)), ms(maxDur(per)), ms(minDur(per))
		k.MinGapMs = ms(minDur(k.oldEndToNewStartMs))
	}

	b.progress("  crash: %d trials (lease %v, renew deadline %v, retry %v)", b.sc.CrashTrials, electLease, electRenew, electRetry)
	res.Crash.Measured = "from the old leader's last confirmed send (its \"started leading\"/\"renewed\" log entries) to a standby's OnStartedLeading; the crash: the old leader's UpdateItem requests hang from then on"
	runKind(&res.Crash, "crash", b.sc.CrashTrials, true)
	b.progress("  graceful release: %d trials", b.sc.GracefulTrials)
	res.Graceful.Measured = "from the send of the old leader's release write (ReleaseOnCancel, its \"released the lease\" log entry) to a standby's OnStartedLeading"
	runKind(&res.Graceful, "graceful", b.sc.GracefulTrials, false)

	if res.standbyTime > 0 {
		res.StandbyReadsPerPeriod = round2(float64(res.standbyReads) / (float64(res.standbyTime) / float64(electRetry)))
	}

	// Round trips of the standbys' requests (polls, takeovers, releases).
	var rtts []time.Duration
	for _, a := range ctrS.attemptLog() {
		if a.err == "" || a.err == "ConditionalCheckFailedException" {
			rtts = append(rtts, a.dur)
		}
	}
	res.RTTSamples = len(rtts)
	p50, p99 := median(rtts), quantile(rtts, 0.99)
	res.RTTP50Ms, res.RTTP99Ms = ms(p50), ms(p99)
	poll := timing.MaxJittered(electRetry)
	bounds := func(k *failoverKind, base time.Duration, formula string) {
		k.BoundFormula = formula
		b50, b99 := base+poll+2*p50, base+poll+2*p99
		k.BoundRTTP50Ms, k.BoundRTTP99Ms = ms(b50), ms(b99)
		for _, f := range k.per {
			if f <= b50 {
				k.WithinBoundP50++
			}
			if f <= b99 {
				k.WithinBoundP99++
			}
		}
	}
	bounds(&res.Crash, electLease, "LeaseDuration + 1.2 × RetryPeriod + 2 round trips")
	bounds(&res.Graceful, 0, "1.2 × RetryPeriod + 2 round trips")
	if res.Crash.Completed == 0 && res.Graceful.Completed == 0 {
		return errors.New("no failover trial completed")
	}
	return nil
}
