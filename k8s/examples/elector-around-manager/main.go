// Command elector-around-manager runs a controller-runtime manager only
// while it leads a dynalease election.Elector: the manager's own leader
// election is off, a new manager starts each time this replica's term
// begins, and its context is the term's, cancelled the moment the term
// ends. The Elector counts a term from the send of the renewal that
// confirmed it and ends it before any other candidate may take over, so
// the controllers of two terms never run at once; when a term is lost the
// process exits, and Kubernetes restarts it fresh.
//
// This is the stronger of the two ways to put controller-runtime on a
// dynalease row (../manager-election is the other: the manager's own,
// client-go's, elector over clientgo.Lock).
//
//	elector-around-manager -table locks -name my-controller
//
// The identity is POD_NAME, else the host name. DYNAMODB_ENDPOINT points
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/dynamodbstore"
)

// durations are the Elector's: the library's defaults.
type durations struct{ lease, renew, retry time.Duration }

var defaults = durations{lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second}

func main() {
	table := flag.String("table", "locks", "DynamoDB lock table")
	name := flag.String("name", "elector-around-manager", "election name (the row's key)")
	flag.Parse()
	ctx := ctrl.SetupSignalHandler()
	db, err := dynamoClient(ctx)
	if err != nil {
		log.Fatal(err)
	}
	lease, err := dynamodbstore.NewLease(dynamodbstore.LeaseConfig{Client: db, Table: *table, Name: *name, Identity: identity()})
	if err != nil {
		log.Fatal(err)
	}
	err = run(ctx, ctrl.GetConfigOrDie(), lease, defaults, func(mgr manager.Manager) error {
		// Controllers are added here as usual (ctrl.NewControllerManagedBy);
		// this one runnable stands for them.
		return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			log.Print("leading: the controllers run")
			<-ctx.Done()
			return nil
		}))
	})
	if errors.Is(err, election.ErrLostLeadership) {
		log.Fatalf("the term ended: exiting, to start again fresh: %v", err)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// run stands for election on lease until ctx ends or a term this replica
// led ends; during its term it runs a manager built by setup, with leader
// election off, on the term's context. It returns nil when ctx ended it,
// and otherwise what the Elector's Run returned (ErrLostLeadership when a
// term ended), joined with the manager's error.
func run(ctx context.Context, cfg *rest.Config, lease resourcelock.Interface, d durations, setup func(manager.Manager) error) error {
	var mgrErr error
	el, err := election.New(election.Config{
		Lock: lease, LeaseDuration: d.lease, RenewDeadline: d.renew, RetryPeriod: d.retry,
		ReleaseOnCancel: true,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(term context.Context) {
				mgr, err := ctrl.NewManager(cfg, ctrl.Options{
					LeaderElection:         false, // this process runs only while it leads
					Metrics:                metricsserver.Options{BindAddress: "0"},
					HealthProbeBindAddress: "0",
				})
				if err == nil {
					err = setup(mgr)
				}
				if err == nil {
					err = mgr.Start(term) // returns when the term ends
				}
				mgrErr = err
			},
			OnStoppedLeading: func() { log.Print("stopped leading") },
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

func identity() string {
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod
	}
	host, _ := os.Hostname()
	return host
}

func dynamoClient(ctx context.Context) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if ep := os.Getenv("DYNAMODB_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	}), nil
}
