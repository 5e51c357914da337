package clientgo_test

// Against DynamoDB Local (make test starts it; DYNAMODB_ENDPOINT points
// elsewhere): client-go's LeaderElector over the Lock, and beside a
// dynalease election.Elector on the same name.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/k8s/clientgo"
	"github.com/dynalease/dynalease/resourcelock"
)

// The electors' timings: a leader steps down when its renewals take
// longer than renewDeadline, so it is kept well above what a request to
// DynamoDB Local takes on a busy machine (over 1.5 s has been seen), for
// the tests' "nothing happened to it" to hold.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 300 * time.Millisecond
	patience      = 60 * time.Second
	electionName  = "controller"
)

// ddbEnv is a fresh table on DynamoDB Local.
type ddbEnv struct {
	t     *testing.T
	store *dynamodbstore.Store
	// leaders counts the candidates leading at once, by their callbacks;
	// most is the largest count seen.
	leaders, most atomic.Int32
}

func newDDBEnv(t *testing.T) *ddbEnv {
	t.Helper()
	c := ddbtest.Client(t)
	table := ddbtest.NewTable(t, c, ddbtest.TableSpec{})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table})
	if err != nil {
		t.Fatalf("dynamodbstore.New: %v", err)
	}
	return &ddbEnv{t: t, store: store}
}

func (e *ddbEnv) started() {
	n := e.leaders.Add(1)
	for {
		m := e.most.Load()
		if n <= m || e.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (e *ddbEnv) stopped() { e.leaders.Add(-1) }

func (e *ddbEnv) row() rows.Item {
	e.t.Helper()
	it, err := rows.MustOpen(e.store).Get(context.Background(), resourcelock.Key{Partition: electionName})
	if err != nil {
		e.t.Fatalf("Get: %v", err)
	}
	return it
}

// candidate is one elector on the row (client-go's or dynalease's),
// running until stop is called.
type candidate struct {
	e  *ddbEnv
	id string

	mu                 sync.Mutex
	leading            bool
	startedAt, endedAt time.Time

	cancel context.CancelFunc
	done   chan struct{}
}

func (c *candidate) onStarted() {
	c.mu.Lock()
	c.leading, c.startedAt = true, time.Now()
	c.mu.Unlock()
	c.e.started()
}

func (c *candidate) onStopped() {
	c.mu.Lock()
	was := c.leading
	c.leading, c.endedAt = false, time.Now()
	c.mu.Unlock()
	if was {
		c.e.stopped()
	}
}

func (c *candidate) isLeading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leading
}

func (c *candidate) times() (started, ended time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startedAt, c.endedAt
}

// stop cancels the candidate's Run and waits for it to return.
func (c *candidate) stop() {
	c.cancel()
	<-c.done
}

func (e *ddbEnv) run(c *candidate, run func(ctx context.Context)) *candidate {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go func() { defer close(c.done); run(ctx) }()
	e.t.Cleanup(c.stop)
	return c
}

// clientGo starts client-go's LeaderElector over a Lock on the row.
func (e *ddbEnv) clientGo(id string, releaseOnCancel bool) *candidate {
	e.t.Helper()
	l, err := clientgo.New(clientgo.Config{Store: e.store, Name: electionName, Identity: id})
	if err != nil {
		e.t.Fatalf("clientgo.New: %v", err)
	}
	c := &candidate{e: e, id: id}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: l, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: releaseOnCancel, Name: id,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { c.onStarted() },
			OnStoppedLeading: c.onStopped,
		},
	})
	if err != nil {
		e.t.Fatalf("NewLeaderElector: %v", err)
	}
	return e.run(c, le.Run)
}

// dynalease starts a dynalease election.Elector on the row.
func (e *ddbEnv) dynalease(id string) *candidate {
	e.t.Helper()
	c := &candidate{e: e, id: id}
	el, err := election.New(election.Config{
		Store: e.store, Name: electionName, Identity: id, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: true,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) { c.onStarted(); <-ctx.Done() },
			OnStoppedLeading: c.onStopped,
		},
	})
	if err != nil {
		e.t.Fatalf("election.New: %v", err)
	}
	return e.run(c, func(ctx context.Context) { _ = el.Run(ctx) })
}

// waitLeader waits until one of cs leads, and returns it.
func (e *ddbEnv) waitLeader(cs ...*candidate) *candidate {
	e.t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		for _, c := range cs {
			if c.isLeading() {
				return c
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("no leader within %v; row %+v", patience, e.row().Record)
	return nil
}

// watchOne checks, for d, that at most one candidate leads at once and
// that c leads throughout.
func (e *ddbEnv) watchOne(c *candidate, d time.Duration) {
	e.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if !c.isLeading() {
			e.t.Fatalf("%s stopped leading while nothing happened to it", c.id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.most.Load(); n > 1 {
		e.t.Fatalf("%d candidates led at once", n)
	}
}

// Three client-go electors over the Lock: one leads, the row names it, and
// no other leads while it renews (for two leases).
func TestDynamoDBClientGoElectsOneLeaderAmongThree(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t)
	cs := []*candidate{e.clientGo("a", false), e.clientGo("b", false), e.clientGo("c", false)}
	leader := e.waitLeader(cs...)
	e.watchOne(leader, 2*leaseDuration)
	if it := e.row(); it.HolderIdentity != leader.id || it.Released {
		t.Fatalf("the row names %q (released %v), the leader is %s", it.HolderIdentity, it.Released, leader.id)
	}
}

// A leader that stops renewing without a release (its process gone) is
// replaced once its record stayed unchanged for the others' LeaseDuration.
func TestDynamoDBClientGoFailsOverAfterACrash(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t)
	a := e.clientGo("a", false)
	first := e.waitLeader(a)
	b := e.clientGo("b", false)
	e.watchOne(first, leaseDuration)
	before := e.row()
	crashed := time.Now()
	a.stop() // no release: the row stays a's
	if it := e.row(); it.Released || it.HolderIdentity != "a" {
		t.Fatalf("a stopped without a release, yet the row is %+v", it.Record)
	}
	e.waitLeader(b)
	started, _ := b.times()
	after := e.row()
	if after.HolderIdentity != "b" || after.Acquisitions != before.Acquisitions+1 {
		t.Fatalf("after the failover the row is %+v, want b's, one transition more than %d", after.Record, before.Acquisitions)
	}
	t.Logf("failover %v after the crash (LeaseDuration %v, RetryPeriod %v)", started.Sub(crashed), leaseDuration, retryPeriod)
}

// With ReleaseOnCancel the leader's cancel marks the row released, and the
// other candidate takes it at its next attempt rather than after a lease.
func TestDynamoDBClientGoHandsOverOnReleaseOnCancel(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t)
	a := e.clientGo("a", true)
	e.waitLeader(a)
	b := e.clientGo("b", true)
	e.watchOne(a, leaseDuration)
	released := time.Now()
	a.stop()
	if it := e.row(); it.HolderIdentity != "b" && (!it.Released || it.HolderIdentity != "a") {
		t.Fatalf("after a's cancel the row is %+v, want released by a (or taken by b)", it.Record)
	}
	e.waitLeader(b)
	started, _ := b.times()
	t.Logf("hand-over %v after the release (RetryPeriod %v)", started.Sub(released), retryPeriod)
}

// Against DynamoDB: a stale Update is refused, and NotFound is mapped.
func TestDynamoDBStaleUpdateAndNotFound(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t)
	testNotFound(t, rows.MustOpen(e.store))
	testStaleUpdate(t, rows.MustOpen(e.store))
}

// A dynalease elector and a client-go elector on the same name never lead
// together: each waits while the other renews, and takes over once the
// other released.
func TestDynamoDBDynaleaseAndClientGoElectorsExcludeEachOther(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t)
	d1 := e.dynalease("dynalease-1")
	e.waitLeader(d1)
	g := e.clientGo("client-go", true)
	e.watchOne(d1, 2*leaseDuration) // client-go sees every renewal and waits
	d1.stop()                       // released on cancel
	_, d1Ended := d1.times()
	e.waitLeader(g)
	gStarted, _ := g.times()
	if gStarted.Before(d1Ended) {
		t.Fatalf("client-go started leading at %v, before the dynalease leader stopped at %v", gStarted, d1Ended)
	}
	d2 := e.dynalease("dynalease-2")
	e.watchOne(g, 2*leaseDuration) // dynalease sees every client-go renewal and waits
	if d2.isLeading() {
		t.Fatal("the second dynalease elector leads beside client-go's")
	}
	g.stop()
	e.waitLeader(d2)
	if n := e.most.Load(); n > 1 {
		t.Fatalf("%d candidates led at once", n)
	}
	if it := e.row(); it.HolderIdentity != "dynalease-2" {
		t.Fatalf("the row names %q, want dynalease-2", it.HolderIdentity)
	}
}
