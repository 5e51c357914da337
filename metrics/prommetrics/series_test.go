package prommetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynalease/dynalease/metrics"
)

// A lock client's loss series exist at 0 from the start, for every kind
// and reason, so that the first loss is an increase an alert sees; and an
// election's work-running gauge exists at 0.
func TestSeriesAlertsNeedExistFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Locks("orders")
	m.Election("scheduler")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			if v := s.GetCounter().GetValue() + s.GetGauge().GetValue(); v != 0 {
				t.Errorf("%s: a series at %v before anything happened", mf.GetName(), v)
			}
		}
		series[mf.GetName()] = len(mf.GetMetric())
	}
	if got, want := series["dynalease_lock_lost_total"], len(metrics.Kinds)*len(lostReasons); got != want {
		t.Errorf("%d loss series before any loss, want %d", got, want)
	}
	if got := series["dynalease_election_work_running"]; got != 1 {
		t.Errorf("%d work-running series, want 1", got)
	}
}
