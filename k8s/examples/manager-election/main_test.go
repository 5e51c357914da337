package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynalease/dynalease/k8s/internal/k8stest"
)

const patience = time.Minute

var short = durations{lease: 2 * time.Second, renew: 1500 * time.Millisecond, retry: 200 * time.Millisecond}

// replica is one manager of the example, with a runnable that counts
// itself in while it runs.
type replica struct {
	running atomic.Bool
	cancel  context.CancelFunc
	done    chan error
}

// Against DynamoDB Local: two managers whose leader election is on one
// dynalease row; one runs its leader-only runnable, and when it stops
// (releasing the row) the other does.
func TestDynamoDBManagersElectOneThroughTheRow(t *testing.T) {
	store := k8stest.Store(t)
	var running atomic.Int32
	start := func(id string) *replica {
		mgr, err := newManager(k8stest.NoAPIServer(), store, "ctl", id, short)
		if err != nil {
			t.Fatalf("newManager: %v", err)
		}
		r := &replica{done: make(chan error, 1)}
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			r.running.Store(true)
			if n := running.Add(1); n > 1 {
				t.Errorf("%d managers run their leader-only work at once", n)
			}
			<-ctx.Done()
			running.Add(-1)
			r.running.Store(false)
			return nil
		})); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() { r.done <- mgr.Start(ctx) }()
		t.Cleanup(func() { cancel(); <-r.done })
		return r
	}
	waitRunning := func(rs ...*replica) *replica {
		t.Helper()
		deadline := time.Now().Add(patience)
		for time.Now().Before(deadline) {
			for _, r := range rs {
				if r.running.Load() {
					return r
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no manager was elected")
		return nil
	}
	a, b := start("a"), start("b")
	first := waitRunning(a, b)
	second := b
	if first == b {
		second = a
	}
	// For two leases, only the first runs.
	for end := time.Now().Add(2 * short.lease); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if second.running.Load() {
			t.Fatal("the second manager runs its leader-only work beside the first")
		}
	}
	first.cancel()
	if err := <-first.done; err != nil {
		t.Fatalf("the first manager's Start: %v", err)
	}
	first.done <- nil // for the cleanup
	waitRunning(second)
}
