// Package otelmetrics reports dynalease's metrics through an OpenTelemetry
// MeterProvider: the same instruments as package prommetrics, for
// services that export with OpenTelemetry. Create one Metrics per
// MeterProvider with New, then hand its Election, Locks and Jobs recorders
// to election.Config.Metrics, lock.Config.Metrics and
// schedule.Config.Metrics.
//
// Names and units follow OpenTelemetry's conventions: dotted names under
// the dynalease namespace, no unit or _total in the name, the unit in the
// instrument (s for durations and timestamps, {request} and the like for
// counts). The attributes keep prommetrics' label names (election, client,
// kind, outcome, reason, scope, name, operation, job, event), so that an
// OpenTelemetry Prometheus exporter, which turns dots into underscores,
// appends _seconds for the unit s and _total to counters, produces the
// very series prommetrics does: the dashboard and the alert rules in
// examples/kubernetes/monitoring work on either unchanged (tested).
//
// The mapping (OpenTelemetry instrument, unit → Prometheus series):
//
//	dynalease.election.leader               gauge {leader}     → dynalease_election_leader
//	dynalease.election.term.remaining       gauge s            → dynalease_election_term_remaining_seconds
//	dynalease.election.leader_changes       counter {change}   → dynalease_election_leader_changes_total
//	dynalease.election.rounds               counter {round}    → dynalease_election_rounds_total
//	dynalease.election.round.duration       histogram s        → dynalease_election_round_duration_seconds
//	dynalease.election.renewals             counter {renewal}  → dynalease_election_renewals_total
//	dynalease.election.renewal.duration     histogram s        → dynalease_election_renewal_duration_seconds
//	dynalease.election.work_running         gauge {work}       → dynalease_election_work_running
//	dynalease.election.handovers            counter {term}     → dynalease_election_handovers_total
//	dynalease.lock.held                     updown {lock}      → dynalease_lock_held
//	dynalease.lock.waiting                  updown {call}      → dynalease_lock_waiting
//	dynalease.lock.handovers                counter {lock}     → dynalease_lock_handovers_total
//	dynalease.lock.acquisitions             counter {lock}     → dynalease_lock_acquisitions_total
//	dynalease.lock.acquire.wait             histogram s        → dynalease_lock_acquire_wait_seconds
//	dynalease.lock.lost                     counter {lock}     → dynalease_lock_lost_total
//	dynalease.lock.heartbeats               counter {beat}     → dynalease_lock_heartbeats_total
//	dynalease.lock.heartbeat.duration       histogram s        → dynalease_lock_heartbeat_duration_seconds
//	dynalease.requests                      counter {request}  → dynalease_requests_total
//	dynalease.request.duration              histogram s        → dynalease_request_duration_seconds
//	dynalease.guarded_writes                counter {write}    → dynalease_guarded_writes_total
//	dynalease.failing                       gauge {failure}    → dynalease_failing
//	dynalease.failing.since.timestamp       gauge s            → dynalease_failing_since_timestamp_seconds
//	dynalease.job.slots                     counter {slot}     → dynalease_job_slots_total
//	dynalease.job.lateness                  histogram s        → dynalease_job_lateness_seconds
//	dynalease.job.run.duration              histogram s        → dynalease_job_run_duration_seconds
//	dynalease.job.last_success.timestamp    gauge s            → dynalease_job_last_success_timestamp_seconds
//	dynalease.job.success_due.timestamp     gauge s            → dynalease_job_success_due_timestamp_seconds
package otelmetrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/dynalease/dynalease/metrics"
)

// Scope is the instrumentation scope of the meters.
const Scope = "github.com/dynalease/dynalease"

// The buckets of the histograms, in seconds, as prommetrics'.
var (
	requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	waitBuckets    = []float64{.01, .1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	lostReasons    = []string{"expired", "stolen", "released_elsewhere", "deleted"}
)

// Metrics holds the instruments, made on one MeterProvider.
type Metrics struct {
	leaderChanges, rounds, renewals metric.Int64Counter
	termHandOvers                   metric.Int64Counter
	roundDur, renewalDur            metric.Float64Histogram
	workRunning                     metric.Int64Gauge
	held                            metric.Int64UpDownCounter
	waiting                         metric.Int64UpDownCounter
	handovers                       metric.Int64Counter
	acquisitions, lost, heartbeats  metric.Int64Counter
	acquireWait, heartbeatDur       metric.Float64Histogram
	requests, guarded               metric.Int64Counter
	requestDur                      metric.Float64Histogram
	failing                         metric.Int64Gauge
	failingSince                    metric.Float64Gauge
	jobSlots                        metric.Int64Counter
	jobLateness, jobDuration        metric.Float64Histogram
	jobLastSuccess, jobDue          metric.Float64Gauge

	mu        sync.Mutex
	elections map[string]*election
}

// New makes the instruments on mp's meter for this library.
func New(mp metric.MeterProvider) (*Metrics, error) {
	in := &instruments{meter: mp.Meter(Scope)}
	m := &Metrics{elections: map[string]*election{}}
	m.makeElections(in)
	m.makeLocks(in)
	m.makeJobs(in)
	if err := errors.Join(in.errs...); err != nil {
		return nil, err
	}
	if err := m.observeTerms(in.meter); err != nil {
		return nil, err
	}
	return m, nil
}

// instruments makes instruments on one meter, collecting their errors.
type instruments struct {
	meter metric.Meter
	errs  []error
}

func (in *instruments) counter(name, unit, desc string) metric.Int64Counter {
	c, err := in.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	in.errs = append(in.errs, err)
	return c
}

func (in *instruments) upDown(name, unit, desc string) metric.Int64UpDownCounter {
	c, err := in.meter.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	in.errs = append(in.errs, err)
	return c
}

func (in *instruments) histogram(name, desc string, buckets []float64) metric.Float64Histogram {
	h, err := in.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
	in.errs = append(in.errs, err)
	return h
}

func (in *instruments) intGauge(name, unit, desc string) metric.Int64Gauge {
	g, err := in.meter.Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	in.errs = append(in.errs, err)
	return g
}

func (in *instruments) timeGauge(name, desc string) metric.Float64Gauge {
	g, err := in.meter.Float64Gauge(name, metric.WithUnit("s"), metric.WithDescription(desc))
	in.errs = append(in.errs, err)
	return g
}

// makeElections makes the elections' instruments, the store's requests'
// and the failing gauges.
func (m *Metrics) makeElections(in *instruments) {
	m.leaderChanges = in.counter("dynalease.election.leader_changes", "{change}", "Changes of the observed leader.")
	m.termHandOvers = in.counter("dynalease.election.handovers", "{term}", "Terms of this candidate that handed the lease to another, by reason: priority or requested.")
	m.rounds = in.counter("dynalease.election.rounds", "{round}", "Campaign rounds by outcome (ok, held, error).")
	m.roundDur = in.histogram("dynalease.election.round.duration", "Duration of campaign rounds.", requestBuckets)
	m.renewals = in.counter("dynalease.election.renewals", "{renewal}", "Leader renewals by outcome (ok, lost, error).")
	m.renewalDur = in.histogram("dynalease.election.renewal.duration", "Duration of leader renewals, settling included.", requestBuckets)
	m.workRunning = in.intGauge("dynalease.election.work_running", "{work}", "1 while the leader's work (OnStartedLeading) runs, else 0.")
	m.requests = in.counter("dynalease.requests", "{request}", "Store requests by operation and outcome (ok, condition_failed, throttled, timeout, error).")
	m.requestDur = in.histogram("dynalease.request.duration", "Store request latency, the SDK's retries included.", requestBuckets)
	m.failing = in.intGauge("dynalease.failing", "{failure}", "1 while the library keeps retrying a failing request, else 0.")
	m.failingSince = in.timeGauge("dynalease.failing.since.timestamp", "When the failure being retried began (Unix time); 0 when none.")
}

// makeLocks makes the locks' instruments and the guarded writes'.
func (m *Metrics) makeLocks(in *instruments) {
	m.held = in.upDown("dynalease.lock.held", "{lock}", "Locks held now, by kind (lock, set, permit: permits in use, shared: readers).")
	m.waiting = in.upDown("dynalease.lock.waiting", "{call}", "Acquisitions under way, by kind.")
	m.handovers = in.counter("dynalease.lock.handovers", "{lock}", "Releases that handed the lock to the next waiter of its queue, by kind.")
	m.acquisitions = in.counter("dynalease.lock.acquisitions", "{lock}", "Locks acquired, by kind (lock, set, permit, shared).")
	m.acquireWait = in.histogram("dynalease.lock.acquire.wait", "Time from an Acquire's call to the lock, by kind.", waitBuckets)
	m.lost = in.counter("dynalease.lock.lost", "{lock}", "Locks lost, by kind and reason (expired, stolen, released_elsewhere, deleted).")
	m.heartbeats = in.counter("dynalease.lock.heartbeats", "{beat}", "Heartbeats by outcome (ok, lost, error).")
	m.heartbeatDur = in.histogram("dynalease.lock.heartbeat.duration", "Duration of heartbeats, settling included.", requestBuckets)
	m.guarded = in.counter("dynalease.guarded_writes", "{write}", "Guarded writes by outcome (committed, lock_lost, condition_failed, conflict, error), and conflict_retried per retry.")
}

// makeJobs makes the scheduled jobs' instruments.
func (m *Metrics) makeJobs(in *instruments) {
	m.jobSlots = in.counter("dynalease.job.slots", "{slot}", "Slots of scheduled jobs by event (started, succeeded, failed, skipped, missed).")
	m.jobLateness = in.histogram("dynalease.job.lateness", "Time from a slot to the start of its run.", waitBuckets)
	m.jobDuration = in.histogram("dynalease.job.run.duration", "Duration of scheduled runs.", waitBuckets)
	m.jobLastSuccess = in.timeGauge("dynalease.job.last_success.timestamp", "When a run of the job last succeeded on this instance (Unix time).")
	m.jobDue = in.timeGauge("dynalease.job.success_due.timestamp", "By when the job must succeed again lest two slots pass without a success.")
}

// observeTerms registers the leader gauge and the term's remaining time,
// read when collected, so that they turn 0 when the validity passes
// whatever the election loop is doing.
func (m *Metrics) observeTerms(meter metric.Meter) error {
	leader, err := meter.Int64ObservableGauge("dynalease.election.leader", metric.WithUnit("{leader}"), metric.WithDescription("1 while this candidate's term is in force, else 0."))
	if err != nil {
		return err
	}
	remaining, err := meter.Float64ObservableGauge("dynalease.election.term.remaining", metric.WithUnit("s"), metric.WithDescription("Time left in this candidate's current term; 0 when not leading."))
	if err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		now := time.Now()
		for name, e := range m.elections {
			left := e.remaining(now)
			var leading int64
			if left > 0 {
				leading = 1
			}
			set := metric.WithAttributes(attribute.String("election", name))
			o.ObserveInt64(leader, leading, set)
			o.ObserveFloat64(remaining, left.Seconds(), set)
		}
		return nil
	}, leader, remaining)
	return err
}

var ctx = context.Background() // the recorders' calls carry no context

// Election returns the recorder of the election called name, for
// election.Config.Metrics. Electors of the same name in one process share
// it.
func (m *Metrics) Election(name string) metrics.Election {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.elections[name]; ok {
		return e
	}
	e := &election{requests: m.requestsFor("election", name), m: m, name: name,
		attrs: metric.WithAttributes(attribute.String("election", name))}
	m.leaderChanges.Add(ctx, 0, e.attrs)
	m.workRunning.Record(ctx, 0, e.attrs)
	for _, reason := range []string{metrics.HandOverPriority, metrics.HandOverRequested} {
		m.termHandOvers.Add(ctx, 0, metric.WithAttributes(attribute.String("election", name), attribute.String("reason", reason)))
	}
	m.elections[name] = e
	return e
}

// Locks returns the recorder of the lock client called name, for
// lock.Config.Metrics.
func (m *Metrics) Locks(name string) metrics.Locks {
	for _, kind := range metrics.Kinds {
		set := metric.WithAttributes(attribute.String("client", name), attribute.String("kind", kind))
		m.held.Add(ctx, 0, set)
		m.waiting.Add(ctx, 0, set)
		m.handovers.Add(ctx, 0, set)
		m.acquisitions.Add(ctx, 0, set)
		// Made up front, so that the first loss of a kind is an increase
		// from 0 (an alert on increase() sees it).
		for _, reason := range lostReasons {
			m.lost.Add(ctx, 0, metric.WithAttributes(attribute.String("client", name), attribute.String("kind", kind), attribute.String("reason", reason)))
		}
	}
	return &locks{requests: m.requestsFor("lock", name), m: m, name: name}
}

func (m *Metrics) requestsFor(scope, name string) requests {
	r := requests{m: m, scope: scope, name: name,
		attrs: metric.WithAttributes(attribute.String("scope", scope), attribute.String("name", name))}
	m.failing.Record(ctx, 0, r.attrs)
	m.failingSince.Record(ctx, 0, r.attrs)
	return r
}

// requests implements metrics.Requests for one scope and name.
type requests struct {
	m           *Metrics
	scope, name string
	attrs       metric.MeasurementOption
}

func (r requests) Request(op string, outcome metrics.Outcome, d time.Duration) {
	r.m.requests.Add(ctx, 1, metric.WithAttributes(attribute.String("scope", r.scope), attribute.String("name", r.name),
		attribute.String("operation", op), attribute.String("outcome", string(outcome))))
	r.m.requestDur.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("scope", r.scope), attribute.String("name", r.name),
		attribute.String("operation", op)))
}

func (r requests) GuardedWrite(outcome string) {
	r.m.guarded.Add(ctx, 1, metric.WithAttributes(attribute.String("scope", r.scope), attribute.String("name", r.name), attribute.String("outcome", outcome)))
}

func (r requests) Failing(err error, since time.Time) {
	if err == nil {
		r.m.failing.Record(ctx, 0, r.attrs)
		r.m.failingSince.Record(ctx, 0, r.attrs)
		return
	}
	r.m.failing.Record(ctx, 1, r.attrs)
	r.m.failingSince.Record(ctx, float64(since.UnixNano())/1e9, r.attrs)
}

// election implements metrics.Election for one election name.
type election struct {
	requests
	m     *Metrics
	name  string
	attrs metric.MeasurementOption

	mu         sync.Mutex
	leading    bool
	validUntil time.Time
}

var (
	_ metrics.ElectionWork      = (*election)(nil)
	_ metrics.ElectionHandOvers = (*election)(nil)
)

// TermHandedOver counts a term that handed the lease over
// (metrics.ElectionHandOvers).
func (e *election) TermHandedOver(reason string) {
	e.m.termHandOvers.Add(ctx, 1, metric.WithAttributes(attribute.String("election", e.name), attribute.String("reason", reason)))
}

func (e *election) Leading(leading bool, validUntil time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading, e.validUntil = leading, validUntil
}

func (e *election) LeaderChanged() { e.m.leaderChanges.Add(ctx, 1, e.attrs) }

// Working reports whether the leader's work runs (metrics.ElectionWork).
func (e *election) Working(running bool) {
	var v int64
	if running {
		v = 1
	}
	e.m.workRunning.Record(ctx, v, e.attrs)
}

func (e *election) Round(outcome metrics.Outcome, d time.Duration) {
	e.m.rounds.Add(ctx, 1, metric.WithAttributes(attribute.String("election", e.name), attribute.String("outcome", string(outcome))))
	e.m.roundDur.Record(ctx, d.Seconds(), e.attrs)
}

func (e *election) Renewal(outcome metrics.Outcome, d time.Duration) {
	e.m.renewals.Add(ctx, 1, metric.WithAttributes(attribute.String("election", e.name), attribute.String("outcome", string(outcome))))
	e.m.renewalDur.Record(ctx, d.Seconds(), e.attrs)
}

// remaining returns the time left in the term at now, 0 when none.
func (e *election) remaining(now time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		return 0
	}
	return max(e.validUntil.Sub(now), 0)
}

// locks implements metrics.Locks for one client name.
type locks struct {
	requests
	m    *Metrics
	name string
}

func (l *locks) kind(kind string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("client", l.name), attribute.String("kind", kind))
}

func (l *locks) Acquired(kind string, wait time.Duration) {
	set := l.kind(kind)
	l.m.acquisitions.Add(ctx, 1, set)
	l.m.acquireWait.Record(ctx, wait.Seconds(), set)
	l.m.held.Add(ctx, 1, set)
}

func (l *locks) Released(kind string) { l.m.held.Add(ctx, -1, l.kind(kind)) }

var _ metrics.LockWaits = (*locks)(nil)

// Waiting counts acquisitions under way (metrics.LockWaits).
func (l *locks) Waiting(kind string, delta int) { l.m.waiting.Add(ctx, int64(delta), l.kind(kind)) }

// HandedOver counts a release that handed the lock over (metrics.LockWaits).
func (l *locks) HandedOver(kind string) { l.m.handovers.Add(ctx, 1, l.kind(kind)) }

func (l *locks) LockLost(kind, reason string) {
	l.m.lost.Add(ctx, 1, metric.WithAttributes(attribute.String("client", l.name), attribute.String("kind", kind), attribute.String("reason", reason)))
	l.m.held.Add(ctx, -1, l.kind(kind))
}

func (l *locks) Heartbeat(outcome metrics.Outcome, d time.Duration) {
	l.m.heartbeats.Add(ctx, 1, metric.WithAttributes(attribute.String("client", l.name), attribute.String("outcome", string(outcome))))
	l.m.heartbeatDur.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("client", l.name)))
}

// Jobs returns the recorder of scheduled jobs, for schedule.Config.Metrics.
func (m *Metrics) Jobs() metrics.Jobs { return jobs{m} }

// jobs implements metrics.Jobs.
type jobs struct{ m *Metrics }

func job(name string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("job", name))
}

func (j jobs) Slots(name, event string, n int) {
	j.m.jobSlots.Add(ctx, int64(n), metric.WithAttributes(attribute.String("job", name), attribute.String("event", event)))
}

func (j jobs) Lateness(name string, d time.Duration) {
	j.m.jobLateness.Record(ctx, d.Seconds(), job(name))
}

func (j jobs) RunDuration(name string, d time.Duration) {
	j.m.jobDuration.Record(ctx, d.Seconds(), job(name))
}

func (j jobs) Succeeded(name string, at time.Time) {
	j.m.jobLastSuccess.Record(ctx, float64(at.UnixNano())/1e9, job(name))
}

func (j jobs) Due(name string, by time.Time) {
	j.m.jobDue.Record(ctx, float64(by.UnixNano())/1e9, job(name))
}
