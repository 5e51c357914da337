package election_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/internal/testkit/logtest"
	"github.com/dynalease/dynalease/resourcelock"
)

// Short durations for the timelines against DynamoDB Local.
const (
	itLease    = 2 * time.Second
	itDeadline = 1500 * time.Millisecond
	itRetry    = 200 * time.Millisecond
	// slack absorbs scheduling and a loaded emulator on a busy machine; it
	// widens the upper bounds of failover times, never the safety checks.
	slack = 2 * time.Second
)

// durations are an Elector's lease timing.
type durations struct {
	lease, deadline, retry, request time.Duration
}

// timeline is the short timing of tests about how soon things happen.
var timeline = durations{lease: itLease, deadline: itDeadline, retry: itRetry}

// candidate is one Elector on DynamoDB Local with its own SDK client behind
// a fault-injecting transport, and a record of its log.
type candidate struct {
	id      string
	e       *election.Elector
	faults  *faulthttp.Transport
	log     *logtest.Recorder
	started chan time.Time // when OnStartedLeading was called
}

func newCandidate(t *testing.T, table, id string, releaseOnCancel bool) *candidate {
	t.Helper()
	return newCandidateWith(t, table, id, releaseOnCancel, timeline)
}

func newCandidateWith(t *testing.T, table, id string, releaseOnCancel bool, d durations, opts ...func(*election.Config)) *candidate {
	t.Helper()
	ft := faulthttp.New(nil)
	client := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = ft })
	lock, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	c := &candidate{id: id, faults: ft, log: &logtest.Recorder{}, started: make(chan time.Time, 100)}
	cfg := election.Config{
		Store: lock, Name: "leader", Identity: id,
		LeaseDuration:   d.lease,
		RenewDeadline:   d.deadline,
		RetryPeriod:     d.retry,
		RequestTimeout:  d.request,
		ReleaseOnCancel: releaseOnCancel,
		Logger:          c.log.Logger(),
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				c.started <- time.Now()
				<-ctx.Done()
			},
			OnStoppedLeading: func() {},
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	c.e, err = election.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// term is one leadership term as the leader itself saw it, on this
// process's monotonic clock: from when it knew it led (began: the
// acquiring write confirmed) to the end of its validity (or the moment it
// gave it up). sent is the send time of the acquiring write, which its
// validity counts from: before began, and for a create that landed on a
// release, possibly before the releaser's term ended (see
// TestCreateSentWhileHeldMayLandAfterTheRelease); the timing tests
// measure from it.
type term struct {
	id                string
	sent, began, till time.Time
	lastSent          time.Time // send time of the last confirmed write
}

func timeValue(t *testing.T, e logtest.Entry, key string) time.Time {
	t.Helper()
	v, ok := e.Values[key].(time.Time)
	if !ok {
		t.Fatalf("log %q has no time %q: %v", e.Msg, key, e.Values)
	}
	return v
}

// terms reconstructs c's terms from its log.
func (c *candidate) terms(t *testing.T) []term {
	t.Helper()
	var out []term
	for _, e := range c.log.Entries() {
		switch e.Msg {
		case "started leading":
			s := timeValue(t, e, "sent")
			out = append(out, term{id: c.id, sent: s, began: e.At, lastSent: s, till: timeValue(t, e, "validUntil")})
		case "renewed":
			cur := &out[len(out)-1]
			cur.lastSent = timeValue(t, e, "sent")
			if v := timeValue(t, e, "validUntil"); v.After(cur.till) {
				cur.till = v
			}
		case "stopped leading":
			// A term given up early ends when it was given up.
			out[len(out)-1].till = timeValue(t, e, "until")
		}
	}
	return out
}

// checkDisjoint fails when two terms of different candidates overlap: when
// one began (its leader knew it led) before the previous one's end.
func checkDisjoint(t *testing.T, cands ...*candidate) []term {
	t.Helper()
	var all []term
	for _, c := range cands {
		all = append(all, c.terms(t)...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].began.Before(all[j].began) })
	overlap := false
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		if cur.began.Before(prev.till) {
			overlap = true
			t.Errorf("terms overlap: %s [%v, %v] and %s [%v, %v] (its write sent at %v)",
				prev.id, prev.began.Format(time.StampMicro), prev.till.Format(time.StampMicro),
				cur.id, cur.began.Format(time.StampMicro), cur.till.Format(time.StampMicro), cur.sent.Format(time.StampMicro))
		}
	}
	if overlap {
		logAll(t, cands...)
	}
	return all
}

// logAll logs every entry the candidates logged, merged in time order, to
// explain a failure.
func logAll(t *testing.T, cands ...*candidate) {
	t.Helper()
	type line struct {
		id string
		e  logtest.Entry
	}
	var lines []line
	for _, c := range cands {
		for _, e := range c.log.Entries() {
			lines = append(lines, line{c.id, e})
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].e.At.Before(lines[j].e.At) })
	for _, l := range lines {
		t.Logf("%s: %s", l.id, l.e)
	}
}

// runLoop runs c's Elector again and again until ctx is done; cancelRun
// ends the current Run.
type runLoop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
}

func (l *runLoop) start(ctx context.Context, c *candidate, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			runCtx, cancel := context.WithCancel(ctx)
			l.mu.Lock()
			l.cancel = cancel
			l.mu.Unlock()
			_ = c.e.Run(runCtx)
			cancel()
		}
	}()
}

func (l *runLoop) cancelRun() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel()
	}
}

func waitLeader(t *testing.T, timeout time.Duration, cands ...*candidate) *candidate {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, c := range cands {
			if c.e.IsLeader() {
				return c
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no leader within %v", timeout)
	return nil
}

func TestDynamoDBThreeElectorsNeverOverlap(t *testing.T) {
	client := ddbtest.Client(t)
	table := ddbtest.NewTable(t, client, ddbtest.TableSpec{})
	cands := []*candidate{
		newCandidate(t, table, "e1", true),
		newCandidate(t, table, "e2", false),
		newCandidate(t, table, "e3", true),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	loops := make([]*runLoop, len(cands))
	for i, c := range cands {
		loops[i] = &runLoop{}
		loops[i].start(ctx, c, &wg)
	}
	// Disturb whoever leads, in turn: cancel its Run (releasing or not),
	// or make its renewals hang past the renew deadline, or make their
	// answers late or lost while the writes land.
	disturbances := []func(i int){
		func(i int) { loops[i].cancelRun() },
		func(i int) {
			h := cands[i].faults.Add(faulthttp.Rule{Op: "UpdateItem", Fault: faulthttp.Delay(3 * time.Second)})
			time.AfterFunc(2*time.Second, func() { h.Remove() })
		},
		func(i int) {
			h := cands[i].faults.Add(faulthttp.Rule{Op: "UpdateItem", Fault: faulthttp.DelayResponse(400 * time.Millisecond)})
			time.AfterFunc(time.Second, func() { h.Remove() })
		},
		func(i int) {
			cands[i].faults.Add(faulthttp.Rule{Op: "UpdateItem", Times: 3, Fault: faulthttp.DropResponse(faulthttp.DropRetryable)})
		},
	}
	for round := 0; round < 6; round++ {
		leader := waitLeader(t, 3*itLease, cands...)
		time.Sleep(400 * time.Millisecond)
		for i, c := range cands {
			if c == leader {
				disturbances[round%len(disturbances)](i)
			}
		}
		time.Sleep(itDeadline)
	}
	cancel()
	wg.Wait()
	all := checkDisjoint(t, cands...)
	if len(all) < 4 {
		t.Fatalf("only %d terms in six disturbances: %+v", len(all), all)
	}
	t.Logf("%d terms, none overlapping", len(all))
}

// lastTerm returns the candidate's last term.
func lastTerm(t *testing.T, c *candidate) term {
	t.Helper()
	terms := c.terms(t)
	if len(terms) == 0 {
		t.Fatalf("%s never led", c.id)
	}
	return terms[len(terms)-1]
}

func TestDynamoDBFailoverAfterCrashWithinLeasePlusOnePoll(t *testing.T) {
	client := ddbtest.Client(t)
	table := ddbtest.NewTable(t, client, ddbtest.TableSpec{})
	a, b := newCandidate(t, table, "a", false), newCandidate(t, table, "b", false)
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- a.e.Run(ctxA) }()
	waitLeader(t, 3*itLease, a)
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneB := make(chan error, 1)
	go func() { doneB <- b.e.Run(ctxB) }()
	time.Sleep(time.Second)
	rtt := measureRoundTrip(t, client, table)

	stopA() // like a crash: no release
	if err := <-doneA; !errors.Is(err, context.Canceled) {
		t.Fatalf("a's Run = %v", err)
	}
	old := lastTerm(t, a)
	select {
	case <-b.started:
	case <-time.After(itLease + 2*time.Second + slack):
		t.Fatal("no failover")
	}
	took := lastTerm(t, b).sent.Sub(old.lastSent)
	bound := itLease + itRetry*12/10 + 2*rtt
	t.Logf("failover from the old leader's last confirmed send: %v (bound %v + slack; round trip %v)", took, bound, rtt)
	if took < itLease {
		t.Fatalf("took over %v after the last confirmed send, before a full lease %v", took, itLease)
	}
	if took > bound+slack {
		t.Fatalf("failover took %v, over %v + %v slack", took, bound, slack)
	}
	checkDisjoint(t, a, b)
}

func TestDynamoDBFailoverAfterReleaseWithinOnePoll(t *testing.T) {
	client := ddbtest.Client(t)
	table := ddbtest.NewTable(t, client, ddbtest.TableSpec{})
	a, b := newCandidate(t, table, "a", true), newCandidate(t, table, "b", false)
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- a.e.Run(ctxA) }()
	waitLeader(t, 3*itLease, a)
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	go func() { _ = b.e.Run(ctxB) }()
	time.Sleep(time.Second)
	rtt := measureRoundTrip(t, client, table)

	stopA()
	if err := <-doneA; !errors.Is(err, context.Canceled) {
		t.Fatalf("a's Run = %v", err)
	}
	released := a.log.Find("released the lease")
	if len(released) != 1 {
		t.Fatalf("a did not release: %v", a.log.Entries())
	}
	select {
	case <-b.started:
	case <-time.After(itLease + slack):
		t.Fatal("no handover within a lease after a release")
	}
	took := lastTerm(t, b).sent.Sub(timeValue(t, released[0], "sent"))
	bound := itRetry*12/10 + 2*rtt
	t.Logf("handover from the release write: %v (bound %v + slack; round trip %v)", took, bound, rtt)
	if took > bound+slack {
		t.Fatalf("handover took %v, over %v + %v slack", took, bound, slack)
	}
	checkDisjoint(t, a, b)
}

// measureRoundTrip returns the median time of a few strongly consistent
// reads against the table.
func measureRoundTrip(t *testing.T, client *dynamodb.Client, table string) time.Duration {
	t.Helper()
	lock, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	var d []time.Duration
	for i := 0; i < 5; i++ {
		start := time.Now()
		if _, err := rows.MustOpen(lock).Get(context.Background(), resourcelock.Key{Partition: "leader"}); err != nil && !errors.Is(err, resourcelock.ErrNotFound) {
			t.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// TestDynamoDBLostAnswersKeepTheLeaderLeading drops or delays the answers of the
// leader's renewals while the writes land: every one is settled by the row
// that the SDK's refused retry carries, or by a read, finding the RVN it
// wrote, so the term goes on without a gap. Its
// subject is not timing: a renew deadline of 8 s lets no stall of a busy
// machine end the term, and a request timeout of 700 ms is still shorter
// than the delayed answers.
func TestDynamoDBLostAnswersKeepTheLeaderLeading(t *testing.T) {
	untimed := durations{lease: 10 * time.Second, deadline: 8 * time.Second, retry: 500 * time.Millisecond, request: 700 * time.Millisecond}
	for _, tc := range []struct {
		name  string
		fault faulthttp.Fault
	}{
		{"retried after landing", faulthttp.DropResponse(faulthttp.DropRetryable)},
		{"dropped after landing", faulthttp.DropResponse(faulthttp.DropTerminal)},
		{"answered after the timeout", faulthttp.DelayResponse(time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := ddbtest.Client(t)
			table := ddbtest.NewTable(t, client, ddbtest.TableSpec{})
			a := newCandidateWith(t, table, "a", false, untimed)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.e.Run(ctx) }()
			waitLeader(t, 3*itLease, a)
			h := a.faults.Add(faulthttp.Rule{Op: "UpdateItem", Times: 5, Fault: tc.fault})
			deadline := time.Now().Add(30 * time.Second)
			for h.Hits() < 5 && time.Now().Before(deadline) {
				if !a.e.IsLeader() {
					t.Fatal("lost leadership although every renewal landed")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if h.Hits() < 5 {
				t.Fatalf("only %d faults applied", h.Hits())
			}
			if n := len(a.log.Find("a write whose answer was lost or refused had landed")); n == 0 {
				t.Fatal("no renewal was settled as landed")
			}
			if !a.e.IsLeader() {
				t.Fatal("not leader after the faults")
			}
			cancel()
			<-done
			if terms := a.terms(t); len(terms) != 1 {
				t.Fatalf("%d terms, want one unbroken term", len(terms))
			}
		})
	}
}

// TestDynamoDBHungRenewalsEndTheTermAndAnotherTakesOver makes every renewal of the
// leader hang past the request timeout without landing.
func TestDynamoDBHungRenewalsEndTheTermAndAnotherTakesOver(t *testing.T) {
	client := ddbtest.Client(t)
	table := ddbtest.NewTable(t, client, ddbtest.TableSpec{})
	a, b := newCandidate(t, table, "a", false), newCandidate(t, table, "b", false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	doneA := make(chan error, 1)
	go func() { doneA <- a.e.Run(ctx) }()
	waitLeader(t, 3*itLease, a)
	go func() { _ = b.e.Run(ctx) }()
	time.Sleep(500 * time.Millisecond)
	a.faults.Add(faulthttp.Rule{Op: "UpdateItem", Fault: faulthttp.Delay(time.Hour)})
	select {
	case err := <-doneA:
		if !errors.Is(err, dynalease.ErrLost) {
			t.Fatalf("a's Run = %v, want dynalease.ErrLost", err)
		}
	case <-time.After(itDeadline + slack):
		t.Fatal("a did not step down within RenewDeadline of hung renewals")
	}
	old := lastTerm(t, a)
	if ended := old.till.Sub(old.lastSent); ended != itDeadline {
		t.Fatalf("a's term ended %v after its last confirmed send, want RenewDeadline %v", ended, itDeadline)
	}
	select {
	case <-b.started:
	case <-time.After(itLease + slack):
		t.Fatal("b did not take over")
	}
	if got := b.e.Leader(); got != "b" {
		t.Fatalf("b sees leader %q", got)
	}
	checkDisjoint(t, a, b)
}

func ExampleElector() {
	// A sketch of typical use; see examples/leader for a complete program.
	var client *dynamodb.Client // from config.LoadDefaultConfig
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: "locks"})
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := election.New(election.Config{
		Store: store, Name: "scheduler", Identity: "host-1",
		ReleaseOnCancel: true,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) { /* lead until ctx is done */ },
			OnStoppedLeading: func() { /* stop acting as leader */ },
			OnNewLeader:      func(id string) { fmt.Println("leader:", id) },
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = e // e.Run(ctx) campaigns, leads one term and returns.
}
