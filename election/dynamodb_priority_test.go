package election_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/resourcelock"
)

// ranked returns the option of a candidate at priority, standing, with
// minTerm (zero: the default).
func ranked(priority int64, minTerm time.Duration) func(*election.Config) {
	return func(c *election.Config) { c.Priority, c.Stand, c.MinTerm = priority, true, minTerm }
}

// running runs c's Elector once in the background: done receives Run's
// result once; stop cancels the Run and waits until it has returned.
func running(c *candidate) (done <-chan error, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		ch <- c.e.Run(ctx)
	}()
	return ch, func() { cancel(); <-returned }
}

func TestDynamoDBAHigherPriorityCandidateLeadsAtASafePoint(t *testing.T) {
	client := ddbtest.Client(t)
	table := ddbtest.NewTable(t, client, ddbtest.TableSpec{})
	a := newCandidateWith(t, table, "a", false, timeline, ranked(0, 0))
	b := newCandidateWith(t, table, "b", false, timeline, ranked(5, 0))
	doneA, stopA := running(a)
	defer stopA()
	waitLeader(t, 3*itLease, a)
	time.Sleep(4 * itRetry) // a's term is older than MinTerm (3 × RetryPeriod)
	rtt := measureRoundTrip(t, client, table)
	start := time.Now()
	_, stopB := running(b)
	defer stopB()
	select {
	case err := <-doneA:
		if !errors.Is(err, election.ErrHandedOver) {
			t.Fatalf("a's Run = %v, want ErrHandedOver", err)
		}
	case <-time.After(itRetry + itDeadline + slack):
		t.Fatal("a never stepped down")
	}
	var led time.Time
	select {
	case led = <-b.started:
	case <-time.After(2*itRetry + slack):
		t.Fatal("b never confirmed the hand-over")
	}
	took := led.Sub(start)
	// b's first poll writes its entry; a's next renewal, a RetryPeriod
	// later at most, sees it change (after the renewal before); the work
	// returns at once; b confirms at its next poll.
	bound := itRetry + 2*itRetry*12/10 + 4*rtt
	t.Logf("from b's start to its OnStartedLeading: %v (bound %v + slack; RetryPeriod + RenewDeadline = %v; round trip %v)", took, bound, itRetry+itDeadline, rtt)
	if took > bound+slack {
		t.Fatalf("b led %v after its start, over %v + %v slack", took, bound, slack)
	}
	checkDisjoint(t, a, b)
	if got := b.e.Leader(); got != "b" {
		t.Fatalf("b's Leader() = %q", got)
	}
}

func TestDynamoDBEqualPrioritiesAndADeadRequesterLeaveTheLeader(t *testing.T) {
	client := ddbtest.Client(t)
	table := ddbtest.NewTable(t, client, ddbtest.TableSpec{})
	const minTerm = 5 * time.Second
	a := newCandidateWith(t, table, "a", false, timeline, ranked(3, minTerm))
	b := newCandidateWith(t, table, "b", false, timeline, ranked(3, 0))
	c := newCandidateWith(t, table, "c", false, timeline, ranked(9, 0))
	doneA, stopA := running(a)
	defer stopA()
	waitLeader(t, 3*itLease, a)
	_, stopB := running(b)
	defer stopB()
	_, stopC := running(c)
	defer stopC()
	// c goes silent (a partition: its writes hang) once its entry is on
	// the row, well before a's MinTerm: its entry stops changing.
	waitStanding(t, client, table, "b", "c")
	c.faults.Add(faulthttp.Rule{Fault: faulthttp.Delay(time.Hour)})
	if age := time.Since(lastTerm(t, a).began); age >= minTerm {
		t.Fatalf("c went silent %v into a's term, not before its MinTerm %v: the machine is too slow for this test", age, minTerm)
	}
	time.Sleep(minTerm + 4*itLease)
	select {
	case err := <-doneA:
		t.Fatalf("a's Run returned %v: stepped down for an equal or a dead candidate", err)
	default:
	}
	if !a.e.IsLeader() {
		t.Fatal("a no longer leads")
	}
	if n := len(a.terms(t)); n != 1 {
		t.Fatalf("a led %d terms", n)
	}
	checkDisjoint(t, a, b, c)
}

func TestDynamoDBHandOver(t *testing.T) {
	client := ddbtest.Client(t)
	table := ddbtest.NewTable(t, client, ddbtest.TableSpec{})
	a := newCandidateWith(t, table, "a", false, timeline, ranked(0, 0))
	b := newCandidateWith(t, table, "b", false, timeline, ranked(0, 0))
	doneA, stopA := running(a)
	defer stopA()
	waitLeader(t, 3*itLease, a)
	_, stopB := running(b)
	defer stopB()
	ctx := context.Background()
	if err := b.e.HandOver(ctx, "a"); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("HandOver by a non-leader: %v, want ErrNotLeader", err)
	}
	if err := a.e.HandOver(ctx, "zed"); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("HandOver to an unknown identity: %v, want ErrInvalid", err)
	}
	rtt := measureRoundTrip(t, client, table)
	// b's entry is live for a once a renewal of a's has seen it change:
	// until then HandOver refuses it as not live.
	var start time.Time
	for give := time.Now().Add(itLease + slack); ; {
		start = time.Now()
		err := a.e.HandOver(ctx, "b")
		if err == nil {
			break
		}
		if !errors.Is(err, dynalease.ErrInvalid) || time.Now().After(give) {
			t.Fatalf("HandOver: %v", err)
		}
		time.Sleep(itRetry / 4)
	}
	written := time.Since(start)
	var led time.Time
	select {
	case led = <-b.started:
	case <-time.After(2*itRetry + slack):
		t.Fatal("b never confirmed the hand-over")
	}
	if err := <-doneA; !errors.Is(err, election.ErrHandedOver) {
		t.Fatalf("a's Run = %v, want ErrHandedOver", err)
	}
	took := led.Sub(start)
	bound := written + itRetry*12/10 + 2*rtt
	t.Logf("from HandOver to b's OnStartedLeading: %v (the hand-over written after %v; bound %v + slack; round trip %v)", took, written, bound, rtt)
	if took > bound+slack {
		t.Fatalf("b led %v after HandOver, over %v + %v slack", took, bound, slack)
	}
	checkDisjoint(t, a, b)
}

// waitStanding waits until the election's row lists an entry of each of
// the identities.
func waitStanding(t *testing.T, client *dynamodb.Client, table string, identities ...string) {
	t.Helper()
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3*itLease + slack)
	for {
		it, err := rows.MustOpen(store).Get(context.Background(), resourcelock.Key{Partition: "leader"})
		missing := slices.Clone(identities)
		if err == nil {
			for _, c := range it.Candidates {
				missing = slices.DeleteFunc(missing, func(id string) bool { return id == c.Identity })
			}
		}
		if err == nil && len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the row never listed %v (last read: %v)", missing, err)
		}
		time.Sleep(itRetry / 4)
	}
}
