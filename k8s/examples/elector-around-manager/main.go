// Command elector-around-manager runs a controller-runtime manager only
// while it leads a dynalease election.Elector: the manager's own leader
// election is off, a new manager starts each time this replica's term
// begins, and its context is the term's, cancelled the moment the term
// ends. The Elector counts a term from the send of the renewal that
// confirmed it and ends it before any other candidate may take over. When
// a term is lost, the process exits at once, from OnStoppedLeading (which
// the term's own timer calls), without waiting for the manager's graceful
// shutdown, and Kubernetes restarts it fresh: nothing of the old term runs
// once others may lead. On SIGTERM the manager stops with a graceful
// shutdown shorter than RenewDeadline, so the leader keeps renewing until
// its controllers have stopped, then releases the row.
//
// This is the stronger of the two ways to put controller-runtime on a
// dynalease row (../manager-election is the other: the manager's own,
// client-go's, elector over clientgo.Lock).
//
//	elector-around-manager -table locks -name my-controller
//
// The identity is POD_NAME (else the host name) and a UUID. DYNAMODB_ENDPOINT points
// at another DynamoDB (DynamoDB Local); otherwise the SDK's default chain
// finds the region and credentials.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"os"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/k8s/examples/internal/env"
	"github.com/dynalease/dynalease/resourcelock"
)

// durations are the Elector's: the library's defaults.
type durations struct{ lease, renew, retry time.Duration }

var defaults = durations{lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second}

func main() {
	table := flag.String("table", "locks", "DynamoDB lock table")
	name := flag.String("name", "elector-around-manager", "election name (the row's key)")
	flag.Parse()
	ctx := ctrl.SetupSignalHandler()
	db, err := env.DynamoDB(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: *table})
	if err != nil {
		log.Fatal(err)
	}
	lost := func() {
		log.Print("the term was lost: exiting at once, to start again fresh")
		os.Exit(1)
	}
	err = run(ctx, ctrl.GetConfigOrDie(), store, *name, env.Identity(), defaults, lost, func(mgr manager.Manager) error {
		// Controllers are added here as usual (ctrl.NewControllerManagedBy);
		// this one runnable stands for them.
		return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			log.Print("leading: the controllers run")
			<-ctx.Done()
			return nil
		}))
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run stands for election on lease until ctx ends or a term this replica
// led ends; during its term it runs a manager built by setup, with leader
// election off, on the term's context. When a term ends other than by ctx
// it calls lost at once, from OnStoppedLeading (main exits there). It
// returns nil when ctx ended it, and otherwise what the Elector's Run
// returned (matching dynalease.ErrLost when a term ended), joined with the
// manager's error.
func run(ctx context.Context, cfg *rest.Config, store resourcelock.Store, name, identity string, d durations, lost func(), setup func(manager.Manager) error) error {
	var mgrErr error
	// The manager's graceful shutdown must end before the term does: a
	// leader cancelled by SIGTERM renews for RenewDeadline while its work
	// returns, then lets the lease run out.
	shutdown := d.renew / 2
	el, err := election.New(election.Config{
		Store: store, Name: name, Identity: identity, LeaseDuration: d.lease, RenewDeadline: d.renew, RetryPeriod: d.retry,
		ReleaseOnCancel: true,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(term context.Context) {
				mgr, err := ctrl.NewManager(cfg, ctrl.Options{
					LeaderElection:          false, // this process runs only while it leads
					GracefulShutdownTimeout: &shutdown,
					Metrics:                 metricsserver.Options{BindAddress: "0"},
					HealthProbeBindAddress:  "0",
				})
				if err == nil {
					err = setup(mgr)
				}
				if err == nil {
					err = mgr.Start(term) // returns when the term ends
				}
				mgrErr = err
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					lost()
				}
			},
		},
	})
	if err != nil {
		return err
	}
	err = el.Run(ctx)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = nil // stopped by the caller: no failure
	}
	return errors.Join(err, mgrErr)
}
