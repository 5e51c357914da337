package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/k8s/internal/k8stest"
	"github.com/dynalease/dynalease/resourcelock"
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

func startReplica(t *testing.T, store resourcelock.Store, id string, lost func()) *replica {
	t.Helper()
	r := &replica{done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.done <- run(ctx, k8stest.NoAPIServer(), store, "ctl", id, short, lost, func(mgr manager.Manager) error {
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
		case err := <-r.done:
			r.done <- err
		case <-time.After(patience):
			t.Error("run did not return")
		}
	})
	return r
}

func waitStarted(t *testing.T, rs ...*replica) *replica {
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

// Against DynamoDB Local: two replicas; one runs a manager, and when its
// context is cancelled its manager stops, it releases the row, and only
// then does the other's manager start.
func TestDynamoDBOnlyTheLeaderRunsAManager(t *testing.T) {
	store := k8stest.Store(t)
	notLost := func(id string) func() { return func() { t.Errorf("%s: a term was lost", id) } }
	a, b := startReplica(t, store, "a", notLost("a")), startReplica(t, store, "b", notLost("b"))
	first := waitStarted(t, a, b)
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
	waitStarted(t, second)
	_, firstEnded := first.times()
	secondStarted, _ := second.times()
	if secondStarted.Before(firstEnded) {
		t.Fatalf("the second manager started at %v, before the first's stopped at %v", secondStarted, firstEnded)
	}
	t.Logf("hand-over: the second manager started %v after the first stopped", secondStarted.Sub(firstEnded))
}

// Against DynamoDB Local: a term lost (the row taken by another) calls
// lost, where the example exits the process, from OnStoppedLeading: with
// the term's end, not after the manager's shutdown.
func TestDynamoDBALostTermCallsLost(t *testing.T) {
	store := k8stest.Store(t)
	lost := make(chan struct{}, 1)
	r := startReplica(t, store, "a", func() { lost <- struct{}{} })
	waitStarted(t, r)
	key := resourcelock.Key{Partition: "ctl"}
	cur, err := rows.MustOpen(store).Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rows.MustOpen(store).Update(context.Background(), key, resourcelock.Precondition{RVN: cur.RVN},
		resourcelock.Record{HolderIdentity: "thief", RVN: uuid.NewString(), LeaseDuration: short.lease}, rows.WriteOptions{}); err != nil {
		t.Fatalf("taking the row: %v", err)
	}
	select {
	case <-lost:
	case <-time.After(patience):
		t.Fatal("the lost term was not reported")
	}
}
