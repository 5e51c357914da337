package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dynalease/dynalease/otel/otelmetrics"
)

// otelFromEnv is --otel's value when given without one: the endpoint then
// comes from the OTEL_EXPORTER_OTLP_* environment, or is OTLP/HTTP's
// default, http://localhost:4318.
const otelFromEnv = "env"

// flushTimeout bounds the wait for the collector when the command ends.
const flushTimeout = 5 * time.Second

// otlpSettings says which signals go out by OTLP, and where.
//
// OTLP is on with --otel, or when OTEL_EXPORTER_OTLP_ENDPOINT (or the
// per-signal OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or _METRICS_ENDPOINT, for
// that signal) is set; OTEL_SDK_DISABLED=true turns it off, and
// OTEL_TRACES_EXPORTER or OTEL_METRICS_EXPORTER=none turns one signal off.
// The exporters read the rest of the standard environment themselves
// (headers, timeout, TLS, compression; OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_METRIC_EXPORT_INTERVAL).
// The command speaks OTLP over HTTP with protobuf only: another protocol
// (grpc, http/json) or exporter is refused, not silently replaced.
type otlpSettings struct {
	traces, metrics bool
	endpoint        string // --otel=URL: the base URL; "" leaves it to the environment
}

func (s otlpSettings) on() bool { return s.traces || s.metrics }

// otlpFromEnv reads the settings from flag, --otel's value ("" when it is
// not given), and the environment.
func otlpFromEnv(flag string) (otlpSettings, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		if flag != "" {
			fmt.Fprintln(os.Stderr, "dynalease: --otel ignored: OTEL_SDK_DISABLED=true")
		}
		return otlpSettings{}, nil
	}
	asked := flag != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	s := otlpSettings{
		traces:  asked || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "",
		metrics: asked || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "",
	}
	for _, sig := range []struct {
		name string
		on   *bool
	}{{"TRACES", &s.traces}, {"METRICS", &s.metrics}} {
		switch v := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_" + sig.name + "_EXPORTER"))); v {
		case "", "otlp":
		case "none":
			*sig.on = false
		default:
			return otlpSettings{}, fmt.Errorf("OTEL_%s_EXPORTER=%s: dynalease exports by OTLP only (otlp or none)", sig.name, v)
		}
		if !*sig.on {
			continue
		}
		for _, name := range []string{"OTEL_EXPORTER_OTLP_" + sig.name + "_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
			if v := strings.ToLower(strings.TrimSpace(os.Getenv(name))); v != "" {
				if v != "http/protobuf" {
					return otlpSettings{}, fmt.Errorf("%s=%s: dynalease sends OTLP over HTTP with protobuf only (http/protobuf, port 4318)", name, v)
				}
				break
			}
		}
	}
	if flag != "" && flag != otelFromEnv {
		u, err := url.Parse(flag)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" ||
			strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1/traces") || strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1/metrics") {
			return otlpSettings{}, fmt.Errorf("--otel %q: want a collector's OTLP/HTTP base URL, such as http://localhost:4318 (the command adds /v1/traces and /v1/metrics)", flag)
		}
		s.endpoint = strings.TrimSuffix(flag, "/")
	}
	return s, nil
}

// otelURLApart refuses "--otel URL": --otel takes its value only after
// "=" (alone it means the environment's endpoint), so the URL would be
// taken for the lock's name or the command. Only the arguments before
// "--" are dynalease's.
func otelURLApart(args []string) error {
	for i, a := range args {
		if a == "--" {
			return nil
		}
		if a == "--otel" && i+1 < len(args) {
			if next := args[i+1]; strings.HasPrefix(next, "http://") || strings.HasPrefix(next, "https://") {
				return fmt.Errorf("--otel %s: write --otel=%s (--otel alone takes the endpoint from OTEL_EXPORTER_OTLP_ENDPOINT)", next, next)
			}
		}
	}
	return nil
}

// otlpExport holds the providers that send by OTLP.
type otlpExport struct {
	traces *sdktrace.TracerProvider // nil when traces are off
	meters *sdkmetric.MeterProvider // nil when no metrics are made
	rec    recorders                // nil when no metrics are made
}

// start makes the providers. reg, when not nil, also gets the metrics
// through OpenTelemetry's Prometheus exporter, for --metrics-addr.
// Nothing is sent before the first span ends or the first interval: an
// unreachable collector shows in the command's error output, and never
// stops the command.
func (s otlpSettings) start(ctx context.Context, reg prometheus.Registerer) (*otlpExport, error) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		fmt.Fprintln(os.Stderr, "dynalease: telemetry:", err)
	}))
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "dynalease")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	e := &otlpExport{}
	if s.traces {
		var opts []otlptracehttp.Option
		if s.endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(s.endpoint+"/v1/traces"))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		e.traces = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if s.metrics {
		var opts []otlpmetrichttp.Option
		if s.endpoint != "" {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(s.endpoint+"/v1/metrics"))
		}
		exp, err := otlpmetrichttp.New(ctx, opts...)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("OTLP metric exporter: %w", err), e.shutdown(ctx))
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if reg != nil {
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("the Prometheus exporter: %w", err), e.shutdown(ctx))
		}
		mopts = append(mopts, sdkmetric.WithReader(exp))
	}
	if len(mopts) > 1 {
		e.meters = sdkmetric.NewMeterProvider(mopts...)
		if e.rec, err = otelmetrics.New(e.meters); err != nil {
			return nil, errors.Join(err, e.shutdown(ctx))
		}
	}
	return e, nil
}

// shutdown sends what the providers hold and stops them, both at once, so
// that a trace endpoint that does not answer leaves the metrics their
// share of ctx.
func (e *otlpExport) shutdown(ctx context.Context) error {
	var traces, meters error
	var wg sync.WaitGroup
	if e.traces != nil {
		wg.Go(func() { traces = e.traces.Shutdown(ctx) })
	}
	if e.meters != nil {
		wg.Go(func() { meters = e.meters.Shutdown(ctx) })
	}
	wg.Wait()
	return errors.Join(traces, meters)
}

// traceContext is the W3C trace context OpenTelemetry's environment
// carrier names: TRACEPARENT and TRACESTATE. The command's spans join the
// trace its own environment names, and its child gets the context of the
// span it runs under, so that the child's spans join that trace.
var traceContext propagation.TraceContext

// contextFromEnv returns ctx with the remote parent that TRACEPARENT names,
// or ctx itself when there is none (or it does not parse).
func contextFromEnv(ctx context.Context) context.Context {
	return traceContext.Extract(ctx, propagation.MapCarrier{
		"traceparent": os.Getenv("TRACEPARENT"),
		"tracestate":  os.Getenv("TRACESTATE"),
	})
}

// traceEnv returns TRACEPARENT (and TRACESTATE) for ctx's span, or nothing
// when ctx carries no valid span context.
func traceEnv(ctx context.Context) []string {
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	var env []string
	if v := c.Get("traceparent"); v != "" {
		env = append(env, "TRACEPARENT="+v)
		if s := c.Get("tracestate"); s != "" {
			env = append(env, "TRACESTATE="+s)
		}
	}
	return env
}
