package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// priorityResult is row 12: how soon a candidate of higher priority leads,
// and how soon HandOver's successor does, beside a graceful release's
// failover measured in the same row.
type priorityResult struct {
	Trials int     `json:"trials"`
	RetryS float64 `json:"retry_period_s"`
	RenewS float64 `json:"renew_deadline_s"`
	LeaseS float64 `json:"lease_duration_s"`
	RTTMs  float64 `json:"rtt_p50_ms"`
	// GracefulMs: a leader's Run cancelled with ReleaseOnCancel, to a
	// standby's OnStartedLeading.
	GracefulMs       []float64 `json:"graceful_ms"`
	GracefulMedianMs float64   `json:"graceful_median_ms"`
	// PreemptMs: a candidate of higher priority's Run started, to its
	// OnStartedLeading (the leader's term older than MinTerm).
	PreemptMs        []float64 `json:"preempt_ms"`
	PreemptMedianMs  float64   `json:"preempt_median_ms"`
	PreemptGoalMs    float64   `json:"preempt_goal_ms"`
	PreemptGoalMet   bool      `json:"preempt_goal_met"`
	HandOverMs       []float64 `json:"handover_ms"`
	HandOverMedianMs float64   `json:"handover_median_ms"`
	HandOverGoalMs   float64   `json:"handover_goal_ms"`
	HandOverGoalMet  bool      `json:"handover_goal_met"`
	// Overlaps counts trials where the new leader's acquiring write was
	// sent before the old leader's term ended, on this process's clock.
	Overlaps     int      `json:"overlapping_terms"`
	FailedTrials []string `json:"failed_trials,omitempty"`
}

// rowPriority is row 12.
func (b *bench) rowPriority(ctx context.Context) error {
	table, err := b.table(ctx, "priority")
	if err != nil {
		return err
	}
	defer b.dropTable(table)
	res := &priorityResult{Trials: b.sc.GracefulTrials, RetryS: electRetry.Seconds(), RenewS: electRenew.Seconds(), LeaseS: electLease.Seconds()}
	b.res.Priority = res
	ctr := newCounter()
	client := b.clients.client(ctr, nil)
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table})
	if err != nil {
		return err
	}
	var rtts []time.Duration
	for range 20 {
		start := time.Now()
		if _, err := rows.MustOpen(store).Get(ctx, resourcelock.Key{Partition: "rtt-" + b.runID}); err != nil && !errors.Is(err, resourcelock.ErrNotFound) {
			return err
		}
		rtts = append(rtts, time.Since(start))
	}
	res.RTTMs = ms(median(rtts))
	stand := func(p int64) func(*election.Config) {
		return func(c *election.Config) { c.Priority, c.Stand = p, true }
	}
	var graceful, preempt, handover []time.Duration
	for i := 0; i < res.Trials; i++ {
		for _, kind := range []string{"graceful", "preempt", "handover"} {
			d, overlap, err := b.priorityTrial(ctx, client, ctr, table, fmt.Sprintf("pr-%s-%s-%d", kind, b.runID, i), kind, stand)
			switch {
			case err != nil:
				res.FailedTrials = append(res.FailedTrials, fmt.Sprintf("%s %d: %v", kind, i, err))
				continue
			case overlap:
				res.Overlaps++
			}
			switch kind {
			case "graceful":
				graceful = append(graceful, d)
			case "preempt":
				preempt = append(preempt, d)
			default:
				handover = append(handover, d)
			}
		}
	}
	res.GracefulMs, res.PreemptMs, res.HandOverMs = msList(graceful), msList(preempt), msList(handover)
	res.GracefulMedianMs, res.PreemptMedianMs, res.HandOverMedianMs = ms(median(graceful)), ms(median(preempt)), ms(median(handover))
	res.PreemptGoalMs = ms(electRetry+electRenew) + res.GracefulMedianMs
	res.HandOverGoalMs = res.GracefulMedianMs + res.RTTMs
	res.PreemptGoalMet = len(preempt) > 0 && res.PreemptMedianMs <= res.PreemptGoalMs
	res.HandOverGoalMet = len(handover) > 0 && res.HandOverMedianMs <= res.HandOverGoalMs
	return nil
}

// priorityTrial runs one trial of kind on the lease name: a leader of
// priority 0 that has led for four RetryPeriods, and then a graceful
// release to a standby, a candidate of priority 5 starting, or HandOver
// to a standby. It returns the time from the event to the new leader's
// OnStartedLeading, and whether the two terms overlapped.
func (b *bench) priorityTrial(ctx context.Context, client *dynamodb.Client, ctr *counter, table, name, kind string, stand func(int64) func(*election.Config)) (time.Duration, bool, error) {
	old, err := startCandidate(ctx, client, ctr, table, name, "old", nil, stand(0))
	if err != nil {
		return 0, false, err
	}
	defer old.stop()
	select {
	case <-old.started:
	case <-time.After(electPatience):
		return 0, false, errors.New("the first candidate did not become leader")
	}
	starts := make(chan time.Time, 1)
	onStart := func(_ *candidate, at time.Time) { starts <- at }
	var next *candidate
	if kind != "preempt" {
		if next, err = startCandidate(ctx, client, ctr, table, name, "next", onStart, stand(0)); err != nil {
			return 0, false, err
		}
		defer next.stop()
	}
	// Past MinTerm (3 × RetryPeriod), at a random phase of the renewals.
	time.Sleep(4*electRetry + rand.N(electRetry))
	event := time.Now()
	switch kind {
	case "graceful":
		old.cancel()
	case "preempt":
		if next, err = startCandidate(ctx, client, ctr, table, name, "next", onStart, stand(5)); err != nil {
			return 0, false, err
		}
		defer next.stop()
	default:
		if err := old.e.HandOver(ctx, "next"); err != nil {
			return 0, false, err
		}
	}
	var at time.Time
	select {
	case at = <-starts:
	case <-time.After(electPatience):
		return 0, false, fmt.Errorf("no new leader within %v", electPatience)
	}
	// The old term's end, as the old leader logged it once stopped (the
	// hand-over or release is written after it), against the new term's
	// acquiring send.
	var oldEnd time.Time
	deadline := time.Now().Add(electPatience)
	for oldEnd.IsZero() && time.Now().Before(deadline) {
		for _, e := range old.rec.Find("stopped leading") {
			oldEnd, _ = e.Values["until"].(time.Time)
		}
		time.Sleep(time.Millisecond)
	}
	newSent := next.sent("started leading")
	overlap := len(newSent) == 0 || oldEnd.IsZero() || newSent[0].Before(oldEnd)
	return at.Sub(event), overlap, nil
}

func printPriority(w io.Writer, r *results) {
	s := r.Priority
	if s == nil {
		return
	}
	section(w, fmt.Sprintf("12. Leader priority and hand-over: %d trials each (lease %.1f s, renew deadline %.1f s, retry %.1f s)", s.Trials, s.LeaseS, s.RenewS, s.RetryS))
	var k kv
	k.add("graceful release", "median %.1f ms %v", s.GracefulMedianMs, s.GracefulMs)
	k.add("higher priority starts → leads", "median %.1f ms %v (goal ≤ RP + RD + graceful median = %.1f ms: %s)", s.PreemptMedianMs, s.PreemptMs, s.PreemptGoalMs, met(s.PreemptGoalMet))
	k.add("HandOver → successor leads", "median %.1f ms %v (goal ≤ graceful median + one round trip = %.1f ms: %s)", s.HandOverMedianMs, s.HandOverMs, s.HandOverGoalMs, met(s.HandOverGoalMet))
	k.add("overlapping terms", "%d", s.Overlaps)
	for _, f := range s.FailedTrials {
		k.add("failed trial", "%s", f)
	}
	k.print(w)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
