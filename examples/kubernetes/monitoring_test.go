package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"

	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/metrics/prommetrics"
)

// scrapeLabels are added by Prometheus to every series it scrapes, not by
// the library; queries may group or match by them.
var scrapeLabels = []string{"instance", "job", "pod", "namespace"}

// catalogue returns every series name prommetrics exports (a histogram's
// _bucket, _sum and _count) with its labels, by recording through every
// recorder method once and gathering.
func catalogue(t *testing.T) map[string][]string {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := prommetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := m.Election("e")
	e.Leading(true, time.Now().Add(time.Minute))
	e.LeaderChanged()
	e.Round(metrics.OK, time.Millisecond)
	e.Renewal(metrics.OK, time.Millisecond)
	e.(metrics.ElectionWork).Working(true)
	l := m.Locks("c")
	l.Acquired(metrics.KindLock, time.Millisecond)
	l.Released(metrics.KindLock)
	l.LockLost(metrics.KindLock, "stolen")
	l.Heartbeat(metrics.OK, time.Millisecond)
	j := m.Jobs()
	j.Slots("j", metrics.SlotStarted, 1)
	j.Lateness("j", time.Millisecond)
	j.RunDuration("j", time.Millisecond)
	j.Succeeded("j", time.Now())
	j.Due("j", time.Now().Add(time.Minute))
	for _, r := range []metrics.Requests{e, l} {
		r.Request("get", metrics.OK, time.Millisecond)
		r.GuardedWrite("committed")
		r.Failing(errors.New("unreachable"), time.Now())
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		var labels []string
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, lp.GetName())
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			out[mf.GetName()+"_bucket"] = append(slices.Clone(labels), "le")
			out[mf.GetName()+"_sum"] = labels
			out[mf.GetName()+"_count"] = labels
			continue
		}
		out[mf.GetName()] = labels
	}
	return out
}

var (
	metricName    = regexp.MustCompile(`\b(dynalease_[a-z_]+)\b`)
	selector      = regexp.MustCompile(`\b(dynalease_[a-z_]+)\{([^}]*)\}`)
	matcherLabel  = regexp.MustCompile(`(\w+)\s*(?:=~|!~|!=|=)`)
	grouping      = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	labelValues   = regexp.MustCompile(`label_values\(\s*(dynalease_[a-z_]+)\s*,\s*(\w+)\s*\)`)
	templateLabel = regexp.MustCompile(`\{\{\s*\$?(?:labels\.)?(\w+)\s*\}\}|\$labels\.(\w+)`)
)

// checkExpr returns what is wrong with a PromQL expression (and the
// legend or annotation texts that name its result's labels) against the
// catalogue: metrics it does not export, labels a metric does not carry,
// and groupings or texts by labels no metric of the expression carries.
func checkExpr(cat map[string][]string, expr string, texts ...string) []string {
	var errs []string
	names := metricName.FindAllStringSubmatch(expr, -1)
	if len(names) == 0 {
		return []string{fmt.Sprintf("%q names no dynalease metric", expr)}
	}
	if !balanced(expr) {
		errs = append(errs, fmt.Sprintf("%q: unbalanced brackets", expr))
	}
	union := slices.Clone(scrapeLabels)
	for _, n := range names {
		labels, ok := cat[n[1]]
		if !ok {
			errs = append(errs, fmt.Sprintf("%q: metric %s is not exported", expr, n[1]))
			continue
		}
		union = append(union, labels...)
	}
	for _, s := range selector.FindAllStringSubmatch(expr, -1) {
		for _, m := range matcherLabel.FindAllStringSubmatch(s[2], -1) {
			if labels, ok := cat[s[1]]; ok && !slices.Contains(labels, m[1]) && !slices.Contains(scrapeLabels, m[1]) {
				errs = append(errs, fmt.Sprintf("%q: %s has no label %q", expr, s[1], m[1]))
			}
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(union, l) {
				errs = append(errs, fmt.Sprintf("%q: no metric of it has label %q to group by", expr, l))
			}
		}
	}
	for _, lv := range labelValues.FindAllStringSubmatch(expr, -1) {
		if labels, ok := cat[lv[1]]; ok && !slices.Contains(labels, lv[2]) {
			errs = append(errs, fmt.Sprintf("%q: %s has no label %q", expr, lv[1], lv[2]))
		}
	}
	for _, text := range texts {
		for _, m := range templateLabel.FindAllStringSubmatch(text, -1) {
			l := m[1] + m[2]
			if !slices.Contains(union, l) {
				errs = append(errs, fmt.Sprintf("%q names label %q, which %q does not carry", text, l, expr))
			}
		}
	}
	return errs
}

// balanced reports whether the brackets of expr pair up (outside strings).
func balanced(expr string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inString := false
	for _, r := range expr {
		switch {
		case r == '"':
			inString = !inString
		case inString:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && !inString
}

// promDuration is a Prometheus duration, as in a rule's for.
var promDuration = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

// The checker is not vacuous: it refuses unknown metrics and labels.
func TestMonitoringCheckRefusesWhatTheLibraryDoesNotExport(t *testing.T) {
	cat := catalogue(t)
	for _, bad := range []struct{ expr, text string }{
		{`dynalease_nope == 1`, ""},
		{`dynalease_lock_held{reason="stolen"}`, ""},
		{`sum by (key) (dynalease_lock_held)`, ""},
		{`label_values(dynalease_election_leader, client)`, ""},
		{`dynalease_election_leader == 0`, "{{ $labels.client }}"},
		{`rate(dynalease_requests_total_bucket[5m])`, ""},
		{`up == 0`, ""},
		{`sum by (client) (rate(dynalease_lock_lost_total[10m)))`, ""},
	} {
		if errs := checkExpr(cat, bad.expr, bad.text); len(errs) == 0 {
			t.Errorf("%q (%q) passed the check", bad.expr, bad.text)
		}
	}
	if errs := checkExpr(cat, `sum by (client, kind, le) (rate(dynalease_lock_acquire_wait_seconds_bucket{client=~"$client"}[5m]))`, "{{client}}"); len(errs) > 0 {
		t.Errorf("a valid expression refused: %v", errs)
	}
}

// Every alert of the PrometheusRule names metrics and labels the library
// exports, and has a severity, a summary and a well-formed duration (when
// it has one).
func TestPrometheusRuleNamesExportedMetrics(t *testing.T) {
	cat := catalogue(t)
	b, err := os.ReadFile("monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `yaml:"alert"`
					Expr        string            `yaml:"expr"`
					For         string            `yaml:"for"`
					Labels      map[string]string `yaml:"labels"`
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		t.Fatal(err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" {
		t.Fatalf("%s %s, want a monitoring.coreos.com/v1 PrometheusRule", rule.APIVersion, rule.Kind)
	}
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %s lacks a severity or a summary", r.Alert)
			}
			if r.For != "" && !promDuration.MatchString(r.For) {
				t.Errorf("alert %s: for %q is not a Prometheus duration", r.Alert, r.For)
			}
			for _, e := range checkExpr(cat, r.Expr, r.Annotations["summary"], r.Annotations["description"]) {
				t.Errorf("alert %s: %s", r.Alert, e)
			}
		}
	}
	for _, want := range []string{"DynaleaseNoLeader", "DynaleaseFailing", "DynaleaseLockStolen", "DynaleaseLeaderWorkOutlivedItsTerm"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s (have %v)", want, alerts)
		}
	}
}

// Every query of the Grafana dashboard, its variables' included, names
// metrics and labels the library exports, and the dashboard covers who
// leads, the term, renewals, locks by kind and reason, requests and
// failing.
func TestGrafanaDashboardNamesExportedMetrics(t *testing.T) {
	cat := catalogue(t)
	b, err := os.ReadFile("monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
				Query      any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			for _, e := range checkExpr(cat, v.Definition) {
				t.Errorf("variable %s: %s", v.Name, e)
			}
		}
		if q, ok := v.Query.(map[string]any); ok {
			query, _ := q["query"].(string)
			if query != v.Definition {
				t.Errorf("variable %s: query %q differs from its definition %q", v.Name, query, v.Definition)
			}
		}
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			all = append(all, tg.Expr)
			for _, e := range checkExpr(cat, tg.Expr, tg.LegendFormat) {
				t.Errorf("panel %q: %s", p.Title, e)
			}
		}
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"dynalease_election_leader", "dynalease_election_term_remaining_seconds", "dynalease_election_renewals_total",
		"dynalease_election_renewal_duration_seconds_bucket", "dynalease_lock_held", "dynalease_lock_acquisitions_total",
		"dynalease_lock_lost_total", "dynalease_requests_total", "dynalease_failing", "dynalease_election_work_running"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no panel shows %s", want)
		}
	}
}
