// Package prommetrics reports dynalease's metrics to Prometheus with
// client_golang. Create one Metrics per Registerer with New, then hand its
// Election and Locks recorders to election.Config.Metrics and
// lock.Config.Metrics.
//
// Names and units follow Prometheus' conventions (base units, _total for
// counters, _seconds for durations). Labels are bounded: an election's or a
// lock client's name (given by the caller), an operation, an outcome or a
// reason; never a lock key.
//
// The metrics, for alerts and dashboards:
//
//	dynalease_election_leader{election}                        1 while this candidate's term is in force
//	dynalease_election_term_remaining_seconds{election}        time left in the current term, 0 when not leading
//	dynalease_election_leader_changes_total{election}          changes of the observed holder
//	dynalease_election_rounds_total{election,outcome}          campaign rounds: ok, held, error
//	dynalease_election_round_duration_seconds{election}
//	dynalease_election_renewals_total{election,outcome}        leader renewals: ok, lost, error
//	dynalease_election_renewal_duration_seconds{election}
//	dynalease_election_work_running{election}                  1 while the leader's work (OnStartedLeading) runs
//	dynalease_election_handovers_total{election,reason}        terms that handed the lease over: priority, requested
//	dynalease_lock_held{client,kind}                           locks held now; kind: lock, set, permit, shared
//	dynalease_lock_waiting{client,kind}                        acquisitions under way
//	dynalease_lock_handovers_total{client,kind}                releases that handed the lock to the next waiter
//	dynalease_lock_acquisitions_total{client,kind}
//	dynalease_lock_acquire_wait_seconds{client,kind}           from Acquire's call to the lock
//	dynalease_lock_lost_total{client,kind,reason}              expired, stolen, released_elsewhere, deleted
//	dynalease_lock_heartbeats_total{client,outcome}            ok, lost, error
//	dynalease_lock_heartbeat_duration_seconds{client}
//	dynalease_requests_total{scope,name,operation,outcome}     store requests: ok, condition_failed, throttled, timeout, error
//	dynalease_request_duration_seconds{scope,name,operation}
//	dynalease_guarded_writes_total{scope,name,outcome}         committed, lock_lost, condition_failed, conflict, error; conflict_retried per retry
//	dynalease_failing{scope,name}                              1 while the library keeps retrying a failure
//	dynalease_failing_since_timestamp_seconds{scope,name}      when that failure began (Unix time), 0 when none
//	dynalease_job_slots_total{job,event}                       started, succeeded, failed, skipped, missed
//	dynalease_job_lateness_seconds{job}                        from a slot to its run's start
//	dynalease_job_run_duration_seconds{job}
//	dynalease_job_last_success_timestamp_seconds{job}          when a run of the job last succeeded here (Unix time)
//	dynalease_job_success_due_timestamp_seconds{job}           by when the job must succeed again (two slots)
//
// scope is "election" or "lock", name the election's or the client's name.
// A useful alert: dynalease_failing == 1 and time() -
// dynalease_failing_since_timestamp_seconds > 60. Another:
// dynalease_election_work_running == 1 and dynalease_election_leader == 0
// for longer than the liveness check's tolerance, a leader's work running
// past its term (what health.Liveness fails on).
package prommetrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynalease/dynalease/metrics"
)

// Metrics holds dynalease's metric families, registered on one
// Registerer.
type Metrics struct {
	leader        *prometheus.Desc
	termRemaining *prometheus.Desc

	leaderChanges *prometheus.CounterVec
	termHandOvers *prometheus.CounterVec
	rounds        *prometheus.CounterVec
	roundDur      *prometheus.HistogramVec
	renewals      *prometheus.CounterVec
	renewalDur    *prometheus.HistogramVec
	workRunning   *prometheus.GaugeVec

	held         *prometheus.GaugeVec
	waiting      *prometheus.GaugeVec
	handovers    *prometheus.CounterVec
	acquisitions *prometheus.CounterVec
	acquireWait  *prometheus.HistogramVec
	lost         *prometheus.CounterVec
	heartbeats   *prometheus.CounterVec
	heartbeatDur *prometheus.HistogramVec

	requests     *prometheus.CounterVec
	requestDur   *prometheus.HistogramVec
	guarded      *prometheus.CounterVec
	failing      *prometheus.GaugeVec
	failingSince *prometheus.GaugeVec

	jobSlots       *prometheus.CounterVec
	jobLateness    *prometheus.HistogramVec
	jobDuration    *prometheus.HistogramVec
	jobLastSuccess *prometheus.GaugeVec
	jobDue         *prometheus.GaugeVec

	mu        sync.Mutex
	elections map[string]*election
}

// requestBuckets suit a store that answers in milliseconds and a request
// timeout of seconds.
var requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// lostReasons are the reasons of dynalease_lock_lost_total (see
// metrics.Locks.LockLost).
var lostReasons = []string{"expired", "stolen", "released_elsewhere", "deleted"}

// waitBuckets suit waits for a lock: from at once to minutes.
var waitBuckets = []float64{.01, .1, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// New creates the metric families and registers them on reg. It fails when
// reg already holds metrics of the same names (one Metrics per Registerer).
func New(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		leader: prometheus.NewDesc("dynalease_election_leader",
			"1 while this candidate's term is in force, else 0.", []string{"election"}, nil),
		termRemaining: prometheus.NewDesc("dynalease_election_term_remaining_seconds",
			"Time left in this candidate's current term; 0 when not leading.", []string{"election"}, nil),

		leaderChanges: counter("dynalease_election_leader_changes_total", "Changes of the observed leader.", "election"),
		termHandOvers: counter("dynalease_election_handovers_total", "Terms of this candidate that handed the lease to another, by reason: priority or requested.", "election", "reason"),
		rounds:        counter("dynalease_election_rounds_total", "Campaign rounds by outcome (ok, held, error).", "election", "outcome"),
		roundDur:      histogram("dynalease_election_round_duration_seconds", "Duration of campaign rounds.", requestBuckets, "election"),
		renewals:      counter("dynalease_election_renewals_total", "Leader renewals by outcome (ok, lost, error).", "election", "outcome"),
		renewalDur:    histogram("dynalease_election_renewal_duration_seconds", "Duration of leader renewals, settling included.", requestBuckets, "election"),
		workRunning:   gauge("dynalease_election_work_running", "1 while the leader's work (OnStartedLeading) runs, else 0.", "election"),

		held:         gauge("dynalease_lock_held", "Locks held now, by kind (lock, set, permit: permits in use, shared: readers).", "client", "kind"),
		waiting:      gauge("dynalease_lock_waiting", "Acquisitions under way, by kind.", "client", "kind"),
		handovers:    counter("dynalease_lock_handovers_total", "Releases that handed the lock to the next waiter of its queue, by kind.", "client", "kind"),
		acquisitions: counter("dynalease_lock_acquisitions_total", "Locks acquired, by kind (lock, set, permit, shared).", "client", "kind"),
		acquireWait:  histogram("dynalease_lock_acquire_wait_seconds", "Time from an Acquire's call to the lock, by kind.", waitBuckets, "client", "kind"),
		lost:         counter("dynalease_lock_lost_total", "Locks lost, by kind and reason (expired, stolen, released_elsewhere, deleted).", "client", "kind", "reason"),
		heartbeats:   counter("dynalease_lock_heartbeats_total", "Heartbeats by outcome (ok, lost, error).", "client", "outcome"),
		heartbeatDur: histogram("dynalease_lock_heartbeat_duration_seconds", "Duration of heartbeats, settling included.", requestBuckets, "client"),

		requests:     counter("dynalease_requests_total", "Store requests by operation and outcome (ok, condition_failed, throttled, timeout, error).", "scope", "name", "operation", "outcome"),
		requestDur:   histogram("dynalease_request_duration_seconds", "Store request latency, the SDK's retries included.", requestBuckets, "scope", "name", "operation"),
		guarded:      counter("dynalease_guarded_writes_total", "Guarded writes by outcome (committed, lock_lost, condition_failed, conflict, error), and conflict_retried per retry.", "scope", "name", "outcome"),
		failing:      gauge("dynalease_failing", "1 while the library keeps retrying a failing request, else 0.", "scope", "name"),
		failingSince: gauge("dynalease_failing_since_timestamp_seconds", "When the failure being retried began (Unix time); 0 when none.", "scope", "name"),

		jobSlots:       counter("dynalease_job_slots_total", "Slots of scheduled jobs by event (started, succeeded, failed, skipped, missed).", "job", "event"),
		jobLateness:    histogram("dynalease_job_lateness_seconds", "Time from a slot to the start of its run.", waitBuckets, "job"),
		jobDuration:    histogram("dynalease_job_run_duration_seconds", "Duration of scheduled runs.", waitBuckets, "job"),
		jobLastSuccess: gauge("dynalease_job_last_success_timestamp_seconds", "When a run of the job last succeeded on this instance (Unix time).", "job"),
		jobDue:         gauge("dynalease_job_success_due_timestamp_seconds", "By when the job must succeed again lest two slots pass without a success.", "job"),

		elections: map[string]*election{},
	}
	for _, c := range []prometheus.Collector{
		electionState{m},
		m.leaderChanges, m.termHandOvers, m.rounds, m.roundDur, m.renewals, m.renewalDur, m.workRunning,
		m.held, m.waiting, m.handovers, m.acquisitions, m.acquireWait, m.lost, m.heartbeats, m.heartbeatDur,
		m.requests, m.requestDur, m.guarded, m.failing, m.failingSince,
		m.jobSlots, m.jobLateness, m.jobDuration, m.jobLastSuccess, m.jobDue,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Election returns the recorder of the election called name, for
// election.Config.Metrics. Electors of the same name in one process share
// it.
func (m *Metrics) Election(name string) metrics.Election {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.elections[name]; ok {
		return e
	}
	e := &election{requests: m.requestsFor("election", name), m: m, name: name}
	m.leaderChanges.WithLabelValues(name)
	m.workRunning.WithLabelValues(name)
	for _, reason := range []string{metrics.HandOverPriority, metrics.HandOverRequested} {
		m.termHandOvers.WithLabelValues(name, reason)
	}
	m.elections[name] = e
	return e
}

// Locks returns the recorder of the lock client called name, for
// lock.Config.Metrics.
func (m *Metrics) Locks(name string) metrics.Locks {
	for _, kind := range metrics.Kinds {
		m.held.WithLabelValues(name, kind)
		m.waiting.WithLabelValues(name, kind)
		m.handovers.WithLabelValues(name, kind)
		m.acquisitions.WithLabelValues(name, kind)
		// Made up front, so that the first loss of a kind is an
		// increase from 0 (an alert on increase() sees it).
		for _, reason := range lostReasons {
			m.lost.WithLabelValues(name, kind, reason)
		}
	}
	return &locks{requests: m.requestsFor("lock", name), m: m, name: name}
}

func (m *Metrics) requestsFor(scope, name string) requests {
	m.failing.WithLabelValues(scope, name)
	m.failingSince.WithLabelValues(scope, name)
	return requests{m: m, scope: scope, name: name}
}

// requests implements metrics.Requests for one scope and name.
type requests struct {
	m           *Metrics
	scope, name string
}

func (r requests) Request(op string, outcome metrics.Outcome, d time.Duration) {
	r.m.requests.WithLabelValues(r.scope, r.name, op, string(outcome)).Inc()
	r.m.requestDur.WithLabelValues(r.scope, r.name, op).Observe(d.Seconds())
}

func (r requests) GuardedWrite(outcome string) {
	r.m.guarded.WithLabelValues(r.scope, r.name, outcome).Inc()
}

func (r requests) Failing(err error, since time.Time) {
	if err == nil {
		r.m.failing.WithLabelValues(r.scope, r.name).Set(0)
		r.m.failingSince.WithLabelValues(r.scope, r.name).Set(0)
		return
	}
	r.m.failing.WithLabelValues(r.scope, r.name).Set(1)
	r.m.failingSince.WithLabelValues(r.scope, r.name).Set(float64(since.UnixNano()) / 1e9)
}

// election implements metrics.Election for one election name.
type election struct {
	requests
	m    *Metrics
	name string

	mu         sync.Mutex
	leading    bool
	validUntil time.Time
}

func (e *election) Leading(leading bool, validUntil time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading, e.validUntil = leading, validUntil
}

func (e *election) LeaderChanged() { e.m.leaderChanges.WithLabelValues(e.name).Inc() }

var (
	_ metrics.ElectionWork      = (*election)(nil)
	_ metrics.ElectionHandOvers = (*election)(nil)
)

// TermHandedOver counts a term that handed the lease over
// (metrics.ElectionHandOvers).
func (e *election) TermHandedOver(reason string) {
	e.m.termHandOvers.WithLabelValues(e.name, reason).Inc()
}

// Working reports whether the leader's work runs (metrics.ElectionWork).
func (e *election) Working(running bool) {
	v := 0.0
	if running {
		v = 1
	}
	e.m.workRunning.WithLabelValues(e.name).Set(v)
}

func (e *election) Round(outcome metrics.Outcome, d time.Duration) {
	e.m.rounds.WithLabelValues(e.name, string(outcome)).Inc()
	e.m.roundDur.WithLabelValues(e.name).Observe(d.Seconds())
}

func (e *election) Renewal(outcome metrics.Outcome, d time.Duration) {
	e.m.renewals.WithLabelValues(e.name, string(outcome)).Inc()
	e.m.renewalDur.WithLabelValues(e.name).Observe(d.Seconds())
}

// remaining returns the time left in the term at now, 0 when none: a term
// whose validity passed counts as over even before the elector says so.
func (e *election) remaining(now time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading {
		return 0
	}
	return max(e.validUntil.Sub(now), 0)
}

// electionState collects the leader gauge and the term's remaining time
// at scrape time, so that they turn 0 when the validity passes whatever
// the election loop is doing.
type electionState struct{ m *Metrics }

func (c electionState) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.m.leader
	ch <- c.m.termRemaining
}

func (c electionState) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	now := time.Now()
	for name, e := range c.m.elections {
		left := e.remaining(now)
		leading := 0.0
		if left > 0 {
			leading = 1
		}
		ch <- prometheus.MustNewConstMetric(c.m.leader, prometheus.GaugeValue, leading, name)
		ch <- prometheus.MustNewConstMetric(c.m.termRemaining, prometheus.GaugeValue, left.Seconds(), name)
	}
}

// locks implements metrics.Locks for one client name.
type locks struct {
	requests
	m    *Metrics
	name string
}

func (l *locks) Acquired(kind string, wait time.Duration) {
	l.m.acquisitions.WithLabelValues(l.name, kind).Inc()
	l.m.acquireWait.WithLabelValues(l.name, kind).Observe(wait.Seconds())
	l.m.held.WithLabelValues(l.name, kind).Inc()
}

func (l *locks) Released(kind string) { l.m.held.WithLabelValues(l.name, kind).Dec() }

var _ metrics.LockWaits = (*locks)(nil)

// Waiting counts acquisitions under way (metrics.LockWaits).
func (l *locks) Waiting(kind string, delta int) {
	l.m.waiting.WithLabelValues(l.name, kind).Add(float64(delta))
}

// HandedOver counts a release that handed the lock over (metrics.LockWaits).
func (l *locks) HandedOver(kind string) { l.m.handovers.WithLabelValues(l.name, kind).Inc() }

func (l *locks) LockLost(kind, reason string) {
	l.m.lost.WithLabelValues(l.name, kind, reason).Inc()
	l.m.held.WithLabelValues(l.name, kind).Dec()
}

func (l *locks) Heartbeat(outcome metrics.Outcome, d time.Duration) {
	l.m.heartbeats.WithLabelValues(l.name, string(outcome)).Inc()
	l.m.heartbeatDur.WithLabelValues(l.name).Observe(d.Seconds())
}

// Jobs returns the recorder of scheduled jobs, for schedule.Config.Metrics.
func (m *Metrics) Jobs() metrics.Jobs { return jobs{m} }

// jobs implements metrics.Jobs.
type jobs struct{ m *Metrics }

func (j jobs) Slots(job, event string, n int) {
	j.m.jobSlots.WithLabelValues(job, event).Add(float64(n))
}

func (j jobs) Lateness(job string, d time.Duration) {
	j.m.jobLateness.WithLabelValues(job).Observe(d.Seconds())
}

func (j jobs) RunDuration(job string, d time.Duration) {
	j.m.jobDuration.WithLabelValues(job).Observe(d.Seconds())
}

func (j jobs) Succeeded(job string, at time.Time) {
	j.m.jobLastSuccess.WithLabelValues(job).Set(float64(at.UnixNano()) / 1e9)
}

func (j jobs) Due(job string, by time.Time) {
	j.m.jobDue.WithLabelValues(job).Set(float64(by.UnixNano()) / 1e9)
}
