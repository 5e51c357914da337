package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease/health"
	"github.com/dynalease/dynalease/internal/tracing"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/metrics/prommetrics"
)

// recorders hands out a command's metrics recorders; prommetrics and
// otelmetrics both do.
type recorders interface {
	Election(name string) metrics.Election
	Jobs() metrics.Jobs
	Locks(name string) metrics.Locks
}

// telemetry is where a command reports. With --metrics-addr it serves
// /metrics (and the probes run, elect and cron add); with OTLP on (--otel
// or the OTEL_EXPORTER_OTLP_* environment, see otlp.go) it sends traces
// and metrics to a collector. With both, the /metrics page is made by
// OpenTelemetry's Prometheus exporter from the same instruments, and
// shows the series prommetrics would (otelmetrics' documented mapping).
// A nil *telemetry reports nothing.
type telemetry struct {
	rec    recorders            // nil: no metrics
	traces trace.TracerProvider // nil: the global provider, a no-op here
	mux    *http.ServeMux       // nil without --metrics-addr
	srv    *http.Server
	otlp   *otlpExport // nil without OTLP
}

// servesMetrics is the annotation of the commands that serve
// --metrics-addr (run, elect, cron); the others only send OTLP.
const servesMetrics = "dynalease/serves-metrics"

// telemetry sets up what c's flags and the environment ask for, serving
// --metrics-addr only when serve is set; it is nil when they ask for
// nothing. close must be called once the command is done: it sends what
// OTLP still holds.
func (c *common) telemetry(ctx context.Context, serve bool) (*telemetry, error) {
	s, err := otlpFromEnv(c.otel)
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	addr := c.metricsAddr
	if !serve {
		addr = ""
	}
	if addr == "" && !s.on() {
		return nil, nil
	}
	t := &telemetry{}
	var reg *prometheus.Registry
	var ln net.Listener
	if addr != "" {
		reg = prometheus.NewRegistry()
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, exit(exitUsage, fmt.Errorf("--metrics-addr: %w", err))
		}
	}
	if s.on() {
		var r prometheus.Registerer // nil, not a nil *Registry, without --metrics-addr
		if reg != nil {
			r = reg
		}
		t.otlp, err = s.start(ctx, r)
		if err != nil {
			if ln != nil {
				ln.Close()
			}
			return nil, exit(exitUsage, err)
		}
		if t.otlp.traces != nil { // not a nil *TracerProvider in the interface
			t.traces = t.otlp.traces
		}
		t.rec = t.otlp.rec
	} else if t.rec, err = prommetrics.New(reg); err != nil {
		ln.Close()
		return nil, err
	}
	if ln != nil {
		t.mux = http.NewServeMux()
		t.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.srv = &http.Server{Handler: t.mux, ReadHeaderTimeout: 5 * time.Second}
		go t.srv.Serve(ln)
		fmt.Fprintf(os.Stderr, "dynalease: serving metrics on http://%s/metrics\n", ln.Addr())
	}
	return t, nil
}

// locks, election and jobs are the recorders for the library's configs:
// nil (the library's no-op) when no metrics are reported.
func (t *telemetry) locks(name string) metrics.Locks {
	if t == nil || t.rec == nil {
		return nil
	}
	return t.rec.Locks(name)
}

func (t *telemetry) election(name string) metrics.Election {
	if t == nil || t.rec == nil {
		return nil
	}
	return t.rec.Election(name)
}

func (t *telemetry) jobs() metrics.Jobs {
	if t == nil || t.rec == nil {
		return nil
	}
	return t.rec.Jobs()
}

// tracerProvider is the provider for the library's configs: nil (the
// global one) without OTLP.
func (t *telemetry) tracerProvider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.traces
}

// span starts a span of the command's own under ctx; without OTLP traces
// it returns ctx and a span that records nothing.
func (t *telemetry) span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracing.New(t.tracerProvider()).Start(ctx, name, trace.WithAttributes(attrs...))
}

// end ends a span of the command's own with the exit code err means; a
// code other than 0 is the span's error.
func (t *telemetry) end(span trace.Span, err error) {
	code := codeOf(err)
	span.SetAttributes(attribute.Int("process.exit.code", code))
	if code != 0 {
		msg := fmt.Sprintf("exit code %d", code)
		var ee *exitError
		if errors.As(err, &ee) && ee.err != nil {
			msg += ": " + ee.err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// health adds the probes when /metrics is served.
func (t *telemetry) health(live, ready health.Checker) {
	if t == nil || t.mux == nil {
		return
	}
	t.mux.Handle("/healthz", health.Handler(live))
	t.mux.Handle("/readyz", health.Handler(ready))
}

// checker is a health.Checker from a function.
type checker struct {
	name  string
	check func() error
}

func (c checker) Name() string              { return c.name }
func (c checker) Check(*http.Request) error { return c.check() }

// close stops the server and sends what OTLP holds, waiting at most
// flushTimeout for the collector. A failed send is printed, never turned
// into the command's exit code: the command's work is done by then.
func (t *telemetry) close() {
	if t == nil {
		return
	}
	if t.srv != nil {
		t.srv.Close()
	}
	if t.otlp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		if err := t.otlp.shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "dynalease: sending telemetry:", err)
		}
	}
}
