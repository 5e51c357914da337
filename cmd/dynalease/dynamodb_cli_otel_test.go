package main_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver stands in for an OpenTelemetry collector: an OTLP/HTTP
// endpoint (protobuf) that records the spans and metrics it is sent.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []*span
	metrics  map[string][]float64 // a metric's name → its data points' values in the last export that had it
	services []string             // service.name of every export's resource
}

// span is a received span with what the tests look at.
type span struct {
	name, traceID, spanID, parentID string
	attrs                           map[string]string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{metrics: map[string][]float64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var in coltracepb.ExportTraceServiceRequest
		if !decode(t, w, req, &in) {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rs := range in.ResourceSpans {
			r.services = append(r.services, attr(rs.Resource, "service.name"))
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, received(s))
				}
			}
		}
		reply(w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var in colmetricpb.ExportMetricsServiceRequest
		if !decode(t, w, req, &in) {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		// Sums are cumulative: an export replaces what the last one said.
		for _, rm := range in.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					var v []float64
					for _, dp := range m.GetSum().GetDataPoints() {
						v = append(v, dp.GetAsDouble()+float64(dp.GetAsInt()))
					}
					for _, dp := range m.GetHistogram().GetDataPoints() {
						v = append(v, float64(dp.GetCount()))
					}
					for _, dp := range m.GetGauge().GetDataPoints() {
						v = append(v, dp.GetAsDouble()+float64(dp.GetAsInt()))
					}
					r.metrics[m.Name] = v
				}
			}
		}
		reply(w, &colmetricpb.ExportMetricsServiceResponse{})
	})
	r.Server = httptest.NewServer(mux)
	t.Cleanup(r.Close)
	return r
}

func decode(t *testing.T, w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	body, err := io.ReadAll(req.Body)
	if err == nil {
		err = proto.Unmarshal(body, m)
	}
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("OTLP request %s (%s): %v", req.URL.Path, req.Header.Get("Content-Type"), err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

func received(s *tracepb.Span) *span {
	out := &span{name: s.Name, traceID: hex.EncodeToString(s.TraceId), spanID: hex.EncodeToString(s.SpanId),
		parentID: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{}}
	for _, kv := range s.Attributes {
		out.attrs[kv.Key] = value(kv.Value)
	}
	return out
}

func attr(r *resourcepb.Resource, key string) string {
	for _, kv := range r.GetAttributes() {
		if kv.Key == key {
			return value(kv.Value)
		}
	}
	return ""
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return v.String()
}

// named returns the received spans called name.
func (r *receiver) named(name string) []*span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*span
	for _, s := range r.spans {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the one span called name, failing the test otherwise.
func (r *receiver) one(t *testing.T, name string) *span {
	t.Helper()
	s := r.named(name)
	if len(s) != 1 {
		t.Fatalf("%d spans %q received, want 1 (all: %v)", len(s), name, r.names())
	}
	return s[0]
}

func (r *receiver) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n []string
	for _, s := range r.spans {
		n = append(n, s.name)
	}
	return n
}

// traceparent finds the TRACEPARENT the command printed.
var traceparent = regexp.MustCompile(`TP=00-([0-9a-f]{32})-([0-9a-f]{16})-01`)

// run --otel=URL: the collector gets the run's span with the acquire and
// the release under it, the AWS SDK's DynamoDB requests under the acquire,
// and the metrics; the command's TRACEPARENT names the run's span.
func TestDynamoDBRunSendsItsTracesAndMetricsByOTLP(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	rcv := newReceiver(t)
	out, code := c.run("run", "--otel="+rcv.URL, "otel-job", "--", "sh", "-c", `echo "TP=$TRACEPARENT"`)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	run := rcv.one(t, "dynalease.run")
	if run.attrs["dynalease.lock.key"] != "otel-job" || run.attrs["process.exit.code"] != "0" {
		t.Errorf("dynalease.run attributes %v, want the key otel-job and exit code 0", run.attrs)
	}
	acquire, release := rcv.one(t, "dynalease.lock.acquire"), rcv.one(t, "dynalease.lock.release")
	for _, s := range []*span{acquire, release} {
		if s.traceID != run.traceID || s.parentID != run.spanID {
			t.Errorf("%s is not under dynalease.run (parent %s, want %s)", s.name, s.parentID, run.spanID)
		}
	}
	if acquire.attrs["dynalease.outcome"] != "acquired" {
		t.Errorf("acquire's outcome %q, want acquired", acquire.attrs["dynalease.outcome"])
	}
	var sdk int
	for _, s := range rcv.named("DynamoDB.UpdateItem") {
		if s.parentID == acquire.spanID {
			sdk++
		}
	}
	if sdk == 0 {
		t.Errorf("no DynamoDB.UpdateItem span of the AWS SDK under the acquire (spans: %v)", rcv.names())
	}
	m := traceparent.FindStringSubmatch(out)
	if m == nil || m[1] != run.traceID || m[2] != run.spanID {
		t.Errorf("the command's TRACEPARENT (%q) does not name dynalease.run (%s %s)", m, run.traceID, run.spanID)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var acquisitions float64 // over its outcomes
	for _, v := range rcv.metrics["dynalease.lock.acquisitions"] {
		acquisitions += v
	}
	if acquisitions != 1 || len(rcv.metrics["dynalease.requests"]) == 0 {
		t.Errorf("dynalease.lock.acquisitions received %v in all, want 1, and some dynalease.requests (metrics: %v)", acquisitions, rcv.metrics)
	}
	if len(rcv.services) == 0 || rcv.services[0] != "dynalease" {
		t.Errorf("service.name %v, want dynalease", rcv.services)
	}
}

// Without --otel, the standard environment turns OTLP on and names the
// service, and the TRACEPARENT dynalease is given becomes its run's parent.
func TestDynamoDBOTLPFromTheStandardEnvironment(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	rcv := newReceiver(t)
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "OTEL_SERVICE_NAME=nightly-report",
		"TRACEPARENT=00-"+trace+"-"+parent+"-01")
	out, code := c.run("run", "env-job", "--", "sh", "-c", `echo "TP=$TRACEPARENT"`)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	run := rcv.one(t, "dynalease.run")
	if run.traceID != trace || run.parentID != parent {
		t.Errorf("dynalease.run in trace %s under %s, want %s under %s (TRACEPARENT)", run.traceID, run.parentID, trace, parent)
	}
	// The child's TRACEPARENT is the run's, not the one dynalease inherited.
	if m := traceparent.FindStringSubmatch(out); m == nil || m[1] != trace || m[2] != run.spanID {
		t.Errorf("the command's TRACEPARENT (%q) does not name dynalease.run (%s %s)", m, trace, run.spanID)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.services) == 0 || rcv.services[0] != "nightly-report" {
		t.Errorf("service.name %v, want nightly-report (OTEL_SERVICE_NAME)", rcv.services)
	}
}

// elect's command runs under its term's span.
func TestDynamoDBElectSendsItsTermByOTLP(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	rcv := newReceiver(t)
	out, code := c.run("elect", "--otel="+rcv.URL, "--once", "otel-election", "--", "sh", "-c", `echo "TP=$TRACEPARENT"`)
	if code != 0 {
		t.Fatalf("elect: exit %d\n%s", code, out)
	}
	term := rcv.one(t, "dynalease.election.term")
	if !strings.HasSuffix(term.attrs["dynalease.election"], "/otel-election") {
		t.Errorf("term attributes %v, want the election otel-election", term.attrs)
	}
	if m := traceparent.FindStringSubmatch(out); m == nil || m[1] != term.traceID || m[2] != term.spanID {
		t.Errorf("the command's TRACEPARENT (%q) does not name the term's span (%s %s)", m, term.traceID, term.spanID)
	}
}

// What the command cannot send by is refused with the reason (64), and an
// unreachable collector is reported without changing the command's code.
func TestDynamoDBOTLPMisconfigured(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, nil, "protobuf only"},
		{[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces", "OTEL_TRACES_EXPORTER=zipkin"}, nil, "OTLP only"},
		{nil, []string{"--otel=localhost:4318"}, "base URL"},
		{nil, []string{"--otel=http://localhost:4318/v1/traces"}, "base URL"},
		{nil, []string{"--otel", "http://localhost:4318"}, "write --otel=http://localhost:4318"},
	} {
		cmd := c.command(append(append([]string{"run"}, tc.args...), "bad-otel", "--", "true")...)
		cmd.Env = append(cmd.Env, tc.env...)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 64 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v %v: exit %d (%v), %q; want 64 and %q", tc.env, tc.args, code, err, out, tc.want)
		}
	}
	// A port nothing listens on: the command runs and its code is kept.
	out, code := c.run("run", "--otel=http://127.0.0.1:1", "no-collector", "--", "sh", "-c", "exit 3")
	if code != 3 || !strings.Contains(out, "telemetry") {
		t.Errorf("with no collector: exit %d, %q; want 3 and the failed send reported", code, out)
	}
}

// With traces turned off (OTEL_TRACES_EXPORTER=none), the metrics still go
// out and no span does.
func TestDynamoDBOTLPMetricsOnly(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	rcv := newReceiver(t)
	c.env = append(c.env, "OTEL_TRACES_EXPORTER=None")
	if out, code := c.run("run", "--otel="+rcv.URL, "metrics-only", "--", "true"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if n := rcv.names(); len(n) != 0 {
		t.Errorf("spans %v sent with OTEL_TRACES_EXPORTER=none", n)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.metrics["dynalease.lock.acquisitions"]) == 0 {
		t.Errorf("no dynalease.lock.acquisitions (metrics: %v)", rcv.metrics)
	}
}

// With --metrics-addr too, /metrics is made by OpenTelemetry's Prometheus
// exporter from the instruments that OTLP sends, with prommetrics' series;
// the spans still go out when the command is stopped.
func TestDynamoDBRunServesMetricsAndSendsOTLP(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	rcv := newReceiver(t)
	cmd, get := startServing(t, c, "--otel="+rcv.URL, "run", "served", "--", "sh", "-c", `while true; do sleep 0.02; done`)
	eventually(t, "ready once the lock is held", func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
	if _, body := get("/metrics"); !strings.Contains(body, `dynalease_lock_held{client="served",kind="lock"} 1`) {
		t.Fatalf("metrics without the held lock:\n%s", body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // the command's code is SIGTERM's; the spans are the point
	if run := rcv.one(t, "dynalease.run"); run.attrs["dynalease.lock.key"] != "served" {
		t.Errorf("dynalease.run attributes %v, want the key served", run.attrs)
	}
}
