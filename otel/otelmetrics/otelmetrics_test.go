package otelmetrics_test

import (
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/metrics/prommetrics"
	"github.com/dynalease/dynalease/otel/otelmetrics"
)

// recorders is what one implementation hands the library.
type recorders struct {
	election metrics.Election
	locks    metrics.Locks
	jobs     metrics.Jobs
}

// scenario reports through every recorder method: a leader elected and
// renewing, a lock acquired, heartbeating, lost and another released, a
// guarded write, a failure and its recovery, a job's slot run.
func scenario(r recorders) {
	now := time.Now()
	e := r.election
	e.Leading(true, now.Add(time.Minute))
	e.LeaderChanged()
	e.Round(metrics.OK, time.Millisecond)
	e.Renewal(metrics.OK, time.Millisecond)
	e.(metrics.ElectionWork).Working(true)
	l := r.locks
	l.Acquired(metrics.KindLock, 20*time.Millisecond)
	l.Heartbeat(metrics.OK, time.Millisecond)
	l.LockLost(metrics.KindLock, "stolen")
	l.Acquired(metrics.KindPermit, time.Millisecond)
	l.Released(metrics.KindPermit)
	for _, q := range []metrics.Requests{e, l} {
		q.Request("update", metrics.OK, time.Millisecond)
		q.Request("get", metrics.Throttled, time.Millisecond)
		q.GuardedWrite("committed")
		q.Failing(errors.New("unreachable"), now)
		q.Failing(nil, time.Time{})
	}
	j := r.jobs
	j.Slots("report", metrics.SlotStarted, 1)
	j.Lateness("report", 5*time.Millisecond)
	j.RunDuration("report", time.Second)
	j.Slots("report", metrics.SlotSucceeded, 1)
	j.Succeeded("report", now)
	j.Due("report", now.Add(time.Hour))
}

// series gathers reg into "name{label=value,…} value" lines, sorted.
func series(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "otel_") || mf.GetName() == "target_info" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				if strings.HasPrefix(lp.GetName(), "otel_") {
					continue
				}
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			sort.Strings(labels)
			line := mf.GetName() + "{" + strings.Join(labels, ",") + "} "
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				line += fmtFloat(m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				v := m.GetGauge().GetValue()
				if v > 1e9 { // a timestamp: equal within the scenario's run
					line += "timestamp"
				} else if v > 1 { // a term's remaining time
					line += "positive"
				} else {
					line += fmtFloat(v)
				}
			case dto.MetricType_HISTOGRAM:
				line += "count=" + fmtFloat(float64(m.GetHistogram().GetSampleCount()))
			}
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}

func fmtFloat(v float64) string {
	return strings.TrimRight(strings.TrimRight(strconvFloat(v), "0"), ".")
}

// The same scenario through prommetrics and through otelmetrics exported
// by OpenTelemetry's Prometheus exporter gives the same series, labels and
// values: the dashboard and the alerts work on either.
func TestTheSameSeriesAsPrommetrics(t *testing.T) {
	promReg := prometheus.NewRegistry()
	pm, err := prommetrics.New(promReg)
	if err != nil {
		t.Fatal(err)
	}
	scenario(recorders{pm.Election("e"), pm.Locks("c"), pm.Jobs()})

	otelReg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(otelReg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	om, err := otelmetrics.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	scenario(recorders{om.Election("e"), om.Locks("c"), om.Jobs()})

	want, got := series(t, promReg), series(t, otelReg)
	for _, s := range want {
		if !slices.Contains(got, s) {
			t.Errorf("prommetrics has %s; otelmetrics does not", s)
		}
	}
	for _, s := range got {
		if !slices.Contains(want, s) {
			t.Errorf("otelmetrics has %s; prommetrics does not", s)
		}
	}
	t.Logf("%d series alike, e.g. %s", len(want), want[len(want)/2])
	if len(want) < 40 {
		t.Fatalf("only %d series gathered: the scenario reports too little", len(want))
	}
}

func strconvFloat(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
