package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dynalease/dynalease/health"
	"github.com/dynalease/dynalease/metrics/prommetrics"
)

// server serves /metrics (and, for elect, /healthz and /readyz) on
// --metrics-addr, when set.
type server struct {
	metrics *prommetrics.Metrics
	mux     *http.ServeMux
	srv     *http.Server
}

// serve starts the server on addr; nil when addr is empty.
func serve(addr string) (*server, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	m, err := prommetrics.New(reg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, exit(exitUsage, fmt.Errorf("--metrics-addr: %w", err))
	}
	s := &server{metrics: m, mux: http.NewServeMux()}
	s.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	fmt.Fprintf(os.Stderr, "dynalease: serving metrics on http://%s/metrics\n", ln.Addr())
	return s, nil
}

// health adds the probes.
func (s *server) health(live, ready health.Checker) {
	if s == nil {
		return
	}
	s.mux.Handle("/healthz", health.Handler(live))
	s.mux.Handle("/readyz", health.Handler(ready))
}

// checker is a health.Checker from a function.
type checker struct {
	name  string
	check func() error
}

func (c checker) Name() string              { return c.name }
func (c checker) Check(*http.Request) error { return c.check() }

func (s *server) close() {
	if s != nil {
		s.srv.Close()
	}
}
