package dynalease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
)

// TestElectionEndToEnd runs the scenario a user sees, through the public
// API only: two replicas on a table made by CreateTable; one leads, the
// other learns who; the leader shuts down gracefully and the other takes
// over within a poll; it then fails its health check only when its work
// outlives its term.
func TestElectionEndToEnd(t *testing.T) {
	client := ddbtest.Client(t)
	ctx := context.Background()
	table := "dynalease-e2e-" + time.Now().Format("150405.000000")
	if err := dynamodbstore.CreateTable(ctx, client, table, dynamodbstore.TableOptions{}); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() { ddbtest.DeleteTable(t, client, table) })
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table})
	if err != nil {
		t.Fatal(err)
	}

	type replica struct {
		e       *election.Elector
		leading chan struct{}
		stopped chan struct{}
		mu      sync.Mutex
		seen    []string
	}
	newReplica := func(id string) *replica {
		r := &replica{leading: make(chan struct{}, 1), stopped: make(chan struct{}, 1)}
		var err error
		r.e, err = election.New(election.Config{
			Store: store, Name: "scheduler", Identity: id,
			// Not a timing test: a term outlasts any stall of a busy
			// machine, and requests have room; a release is still
			// taken over within a poll.
			LeaseDuration:   20 * time.Second,
			RenewDeadline:   15 * time.Second,
			RetryPeriod:     200 * time.Millisecond,
			RequestTimeout:  5 * time.Second,
			ReleaseOnCancel: true,
			Callbacks: election.Callbacks{
				OnStartedLeading: func(ctx context.Context) {
					r.leading <- struct{}{}
					<-ctx.Done()
				},
				OnStoppedLeading: func() { r.stopped <- struct{}{} },
				OnNewLeader: func(id string) {
					r.mu.Lock()
					r.seen = append(r.seen, id)
					r.mu.Unlock()
				},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := newReplica("replica-a"), newReplica("replica-b")

	ctxA, stopA := context.WithCancel(ctx)
	doneA := make(chan error, 1)
	go func() { doneA <- a.e.Run(ctxA) }()
	select {
	case <-a.leading:
	case <-time.After(30 * time.Second):
		t.Fatal("replica-a never led an empty table")
	}
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	doneB := make(chan error, 1)
	go func() { doneB <- b.e.Run(ctxB) }()
	waitFor(t, "replica-b to see replica-a lead", func() bool { return b.e.Leader() == "replica-a" })
	if b.e.IsLeader() || !a.e.IsLeader() {
		t.Fatal("wrong replica leads")
	}
	if err := a.e.Check(0); err != nil {
		t.Fatalf("health check of a healthy leader: %v", err)
	}

	// Graceful shutdown of the leader: its work returns, it releases, and
	// replica-b takes over at its next poll rather than after a lease.
	released := time.Now()
	stopA()
	if err := <-doneA; !errors.Is(err, context.Canceled) {
		t.Fatalf("replica-a Run = %v, want context.Canceled", err)
	}
	select {
	case <-a.stopped:
	default:
		t.Fatal("replica-a's OnStoppedLeading did not run before Run returned")
	}
	select {
	case <-b.leading:
	case <-time.After(10 * time.Second): // a poll, with slack; a lease would be 20 s
		t.Fatal("replica-b did not take over a released lease")
	}
	t.Logf("handover after release took %v", time.Since(released))
	if !b.e.IsLeader() || a.e.IsLeader() || a.e.Leader() != "" {
		t.Fatalf("after handover: a.IsLeader=%v b.IsLeader=%v a.Leader=%q", a.e.IsLeader(), b.e.IsLeader(), a.e.Leader())
	}
	seen := func() []string {
		b.mu.Lock()
		defer b.mu.Unlock()
		return append([]string(nil), b.seen...)
	}
	// OnNewLeader calls are delivered in order, but asynchronously.
	waitFor(t, "OnNewLeader(replica-b)", func() bool { return len(seen()) >= 2 })
	if s := seen(); len(s) != 2 || s[0] != "replica-a" || s[1] != "replica-b" {
		t.Fatalf("replica-b's OnNewLeader calls = %v, want replica-a then replica-b", s)
	}
	stopB()
	if err := <-doneB; !errors.Is(err, context.Canceled) {
		t.Fatalf("replica-b Run = %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
