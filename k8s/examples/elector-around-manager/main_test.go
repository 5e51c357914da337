package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynalease/dynalease/k8s/internal/k8stest"
	"github.com/dynalease/dynalease/resourcelock/dynamodbstore"
)

const patience = time.Minute

var short = durations{lease: 2 * time.Second, renew: 1500 * time.Millisecond, retry: 200 * time.Millisecond}

// replica is one run of the example, whose manager's runnable notes when
// it started and stopped.
type replica struct {
	mu             sync.Mutex
	started, ended time.Time
	cancel         context.CancelFunc
	done           chan error
}

func (r *replica) times() (started, ended time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started, r.ended
}

// Against DynamoDB Local: two replicas; one runs a manager, and when its
// context is cancelled its manager stops, it releases the row, and only
// then does the other's manager start.
func TestDynamoDBOnlyTheLeaderRunsAManager(t *testing.T) {
	_, cfg := k8stest.Store(t)
	start := func(id string) *replica {
		lc := cfg
		lc.Name, lc.Identity = "ctl", id
		lease, err := dynamodbstore.NewLease(lc)
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{done: make(chan error, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() {
			r.done <- run(ctx, k8stest.NoAPIServer(), lease, short, func(mgr manager.Manager) error {
				return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
					r.mu.Lock()
					r.started = time.Now()
					r.mu.Unlock()
					<-ctx.Done()
					r.mu.Lock()
					r.ended = time.Now()
					r.mu.Unlock()
					return nil
				}))
			})
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-r.done:
			case <-time.After(patience):
				t.Error("run did not return")
			}
		})
		return r
	}
	waitStarted := func(rs ...*replica) *replica {
		t.Helper()
		for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, r := range rs {
				if s, _ := r.times(); !s.IsZero() {
					return r
				}
			}
		}
		t.Fatal("no replica ran a manager")
		return nil
	}
	a, b := start("a"), start("b")
	first := waitStarted(a, b)
	second := b
	if first == b {
		second = a
	}
	for end := time.Now().Add(2 * short.lease); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if s, _ := second.times(); !s.IsZero() {
			t.Fatal("the second replica runs a manager beside the first")
		}
	}
	first.cancel()
	select {
	case err := <-first.done:
		first.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("run after a cancel: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("run did not return after its cancel")
	}
	waitStarted(second)
	_, firstEnded := first.times()
	secondStarted, _ := second.times()
	if secondStarted.Before(firstEnded) {
		t.Fatalf("the second manager started at %v, before the first's stopped at %v", secondStarted, firstEnded)
	}
	t.Logf("hand-over: the second manager started %v after the first stopped", secondStarted.Sub(firstEnded))
}
