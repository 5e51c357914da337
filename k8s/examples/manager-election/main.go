// Command manager-election runs a controller-runtime manager whose own
// leader election is on a dynalease row in DynamoDB (clientgo.Lock, set
// as the manager's LeaderElectionResourceLockInterface), so that replicas
// of a controller in several clusters elect one leader through a table
// outside any of them.
//
// The manager's elector is client-go's: it counts a term from when a
// renewal returned, and a leader whose renewals hang can still believe it
// leads after another replica took over (see docs/kubernetes.md in the
// core's repository). Where that matters, use ../elector-around-manager instead.
//
//	manager-election -table locks -name my-controller
//
// The identity is POD_NAME (else the host name) and a UUID. DYNAMODB_ENDPOINT points
// at another DynamoDB (DynamoDB Local); otherwise the SDK's default chain
// finds the region and credentials.
package main

import (
	"context"
	"flag"
	"log"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/k8s/clientgo"
	"github.com/dynalease/dynalease/k8s/examples/internal/env"
	"github.com/dynalease/dynalease/resourcelock"
)

// durations are the manager's leader election's: client-go's defaults.
type durations struct{ lease, renew, retry time.Duration }

var defaults = durations{lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second}

func main() {
	table := flag.String("table", "locks", "DynamoDB lock table")
	name := flag.String("name", "manager-election", "election name (the row's key)")
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
	mgr, err := newManager(ctrl.GetConfigOrDie(), store, *name, env.Identity(), defaults)
	if err != nil {
		log.Fatal(err)
	}
	// Controllers are added here as usual (ctrl.NewControllerManagedBy);
	// this one runnable stands for them: it runs only on the leader.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		log.Print("leading: the controllers run")
		<-ctx.Done()
		return nil
	})); err != nil {
		log.Fatal(err)
	}
	if err := mgr.Start(ctx); err != nil {
		log.Fatal(err)
	}
}

// newManager returns a manager whose leader election is on the row name of
// store, as identity (unique: see clientgo.Config.Identity).
func newManager(cfg *rest.Config, store resourcelock.Store, name, identity string, d durations) (manager.Manager, error) {
	lock, err := clientgo.New(clientgo.Config{Store: store, Name: name, Identity: identity})
	if err != nil {
		return nil, err
	}
	return ctrl.NewManager(cfg, ctrl.Options{
		LeaderElection:                      true,
		LeaderElectionID:                    name,
		LeaderElectionResourceLockInterface: lock,
		// Off: client-go's elector releases the row before it stops
		// leading, which lengthens its term past the lease others wait
		// when the release hangs. A rolling update then waits a lease.
		LeaderElectionReleaseOnCancel: false,
		LeaseDuration:                 &d.lease,
		RenewDeadline:                 &d.renew,
		RetryPeriod:                   &d.retry,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
	})
}
