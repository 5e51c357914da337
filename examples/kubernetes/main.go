// Command kubernetes is a singleton worker for a Deployment of several
// replicas: every replica stands for election on a DynamoDB table, and only
// the leader does the work. It serves, on -listen:
//
//	/healthz  liveness: fails when a term ended and the work has not returned
//	/readyz   readiness: fails when the lease record cannot be read or written
//	/metrics  Prometheus metrics (package prommetrics)
//
// SIGTERM (a rolling update, a scale-down) cancels the work; once it has
// returned the leader marks the lease released (ReleaseOnCancel), so another
// replica takes over within a poll instead of after a full lease, and the
// process exits 0. deployment.yaml beside this file runs three replicas;
// monitoring/ has a Grafana dashboard (grafana-dashboard.json, importable)
// and alert rules (prometheusrule.yaml, a PrometheusRule of the Prometheus
// Operator) over the metrics, which monitoring_test.go checks against the
// metrics the library exports.
//
// The identity is the pod name (POD_NAME, from the downward API), else the
// host name. With DYNAMODB_ENDPOINT set it talks to that server (DynamoDB
// Local); otherwise to Amazon DynamoDB with the SDK's default credential
// chain, which on EKS picks up IAM roles for service accounts or EKS Pod
// Identity (see docs/iam/election.json for the permissions).
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/examples/internal/ddbclient"
	"github.com/dynalease/dynalease/health"
	"github.com/dynalease/dynalease/metrics/prommetrics"
)

func main() {
	table := flag.String("table", "dynalease-locks", "DynamoDB table of the lease")
	name := flag.String("election", "singleton-worker", "election (lease) name")
	listen := flag.String("listen", ":8080", "address of /healthz, /readyz and /metrics")
	lease := flag.Duration("lease", election.DefaultLeaseDuration, "LeaseDuration")
	renew := flag.Duration("renew-deadline", election.DefaultRenewDeadline, "RenewDeadline")
	retry := flag.Duration("retry", election.DefaultRetryPeriod, "RetryPeriod")
	createTable := flag.Bool("create-table", false, "create the table if missing (needs docs/iam/create-tables.json)")
	flag.Parse()
	if err := run(*table, *name, *listen, *lease, *renew, *retry, *createTable); err != nil {
		log.Fatal(err)
	}
}

func run(table, name, listen string, lease, renew, retry time.Duration, createTable bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := funcr.New(func(prefix, args string) { log.Println(prefix, args) }, funcr.Options{})

	db, err := ddbclient.New(ctx)
	if err != nil {
		return err
	}
	if createTable {
		if err := dynamodbstore.CreateTable(ctx, db, table, dynamodbstore.TableOptions{}); err != nil {
			return err
		}
	}
	id := os.Getenv("POD_NAME")
	if id == "" {
		id, _ = os.Hostname()
	}
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: table})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := prommetrics.New(reg)
	if err != nil {
		return err
	}
	e, err := election.New(election.Config{
		Store:           store,
		Name:            name,
		Identity:        id,
		LeaseDuration:   lease,
		RenewDeadline:   renew,
		RetryPeriod:     retry,
		ReleaseOnCancel: true,
		Metrics:         m.Election(name),
		Logger:          logger,
		Callbacks: election.Callbacks{
			OnStartedLeading: work,
			OnStoppedLeading: func() { log.Printf("id=%s event=stopped-leading", id) },
			OnNewLeader:      func(leader string) { log.Printf("id=%s event=new-leader leader=%s", id, leader) },
		},
	})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	// Tolerances: liveness gives the work a RenewDeadline to return after
	// its term ended; readiness reports a record unreachable for three polls.
	mux.Handle("/healthz", health.Handler(health.Liveness(e, renew)))
	mux.Handle("/readyz", health.Handler(health.Readiness(e, 3*retry)))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	log.Printf("id=%s event=serving addr=%s", id, ln.Addr())

	for ctx.Err() == nil {
		err := e.Run(ctx)
		switch {
		case errors.Is(err, dynalease.ErrLost):
			log.Printf("id=%s event=term-ended err=%q", id, err)
		case err != nil && ctx.Err() == nil:
			return err // waiting cannot fix it
		}
	}
	log.Printf("id=%s event=exit", id)
	return nil
}

// work is the singleton's job: here, a tick every second until the term
// ends. Real work uses ctx for every call, and election.TokenFromContext
// or Elector.Guard for writes that must not outlive the term.
func work(ctx context.Context) {
	log.Printf("event=started-leading")
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			log.Printf("event=work")
		}
	}
}
