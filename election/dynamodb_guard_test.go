package election_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/internal/timing"
	"github.com/dynalease/dynalease/resourcelock"
)

// Names of this file start with eg, apart from the package's other tests.

// Durations of the electors here: A's lease is what B has to wait out.
const (
	egLease    = time.Second
	egDeadline = 800 * time.Millisecond
	egRetry    = 200 * time.Millisecond
	egPatience = 15 * time.Second
)

// egCandidate is an Elector with fencing on DynamoDB Local, its own SDK
// client behind a counting transport, and the leader contexts it was
// given.
type egCandidate struct {
	id      string
	e       *election.Elector
	lk      *dynamodbstore.Store
	ft      *faulthttp.Transport
	leading chan context.Context
	result  chan error
}

func newEGCandidate(t *testing.T, locks, fences, id string, clk timing.Clock) *egCandidate {
	t.Helper()
	c := &egCandidate{id: id, ft: faulthttp.New(nil), leading: make(chan context.Context, 4), result: make(chan error, 1)}
	client := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = c.ft })
	lk, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: locks, FenceTable: fences})
	if err != nil {
		t.Fatal(err)
	}
	c.lk = lk
	c.e, err = election.New(election.Config{
		Store: lk, Name: "leader", Identity: id,
		LeaseDuration: egLease,
		RenewDeadline: egDeadline,
		RetryPeriod:   egRetry,
		Fencing:       true,
		Clock:         clk,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				c.leading <- ctx
				<-ctx.Done()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run starts the candidate's Run; it is cancelled, and awaited, when the
// test ends.
func (c *egCandidate) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { c.result <- c.e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.result:
		case <-time.After(egPatience):
			t.Errorf("%s: Run did not return after its cancel", c.id)
		}
	})
}

// leaderContext waits until the candidate leads and returns its leader
// context.
func (c *egCandidate) leaderContext(t *testing.T) context.Context {
	t.Helper()
	select {
	case ctx := <-c.leading:
		return ctx
	case err := <-c.result:
		t.Fatalf("%s: Run returned %v before leading", c.id, err)
	case <-time.After(egPatience):
		t.Fatalf("%s: not leading within %v", c.id, egPatience)
	}
	return nil
}

// egItems writes and reads the application's items (partition key "id").
type egItems struct {
	t     *testing.T
	raw   *dynamodb.Client
	table string
}

func (d egItems) put(id, writer string, seq int64) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(d.table), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: id}, "writer": &types.AttributeValueMemberS{Value: writer},
		"seq": &types.AttributeValueMemberN{Value: strconv.FormatInt(seq, 10)},
	}}}
}

// bump sets writer and seq if the item's seq is wantSeq.
func (d egItems) bump(id, writer string, wantSeq, seq int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                aws.String(d.table),
		Key:                      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:         aws.String("SET #w = :w, #s = :s"),
		ConditionExpression:      aws.String("#s = :want"),
		ExpressionAttributeNames: map[string]string{"#w": "writer", "#s": "seq"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":w": &types.AttributeValueMemberS{Value: writer}, ":s": &types.AttributeValueMemberN{Value: strconv.FormatInt(seq, 10)},
			":want": &types.AttributeValueMemberN{Value: strconv.FormatInt(wantSeq, 10)},
		},
	}}
}

// fenced writes id's writer with a plain UpdateItem admitted only if the
// item's fence is no larger than token, recording token.
func (d egItems) fenced(id, writer string, token int64) error {
	_, err := d.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.table),
		Key:                      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:         aws.String("SET #w = :w, #f = :tok"),
		ConditionExpression:      aws.String("attribute_not_exists(#f) OR #f <= :tok"),
		ExpressionAttributeNames: map[string]string{"#w": "writer", "#f": "fence"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":w": &types.AttributeValueMemberS{Value: writer}, ":tok": &types.AttributeValueMemberN{Value: strconv.FormatInt(token, 10)},
		},
	})
	return err
}

// want checks item id's writer and seq; writer "" means no item.
func (d egItems) want(what, id, writer string, seq int64) {
	d.t.Helper()
	out, err := d.raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(d.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		d.t.Fatalf("%s: reading %q: %v", what, id, err)
	}
	if writer == "" {
		if len(out.Item) != 0 {
			d.t.Errorf("%s: item %q exists (%v), want none", what, id, out.Item)
		}
		return
	}
	w, _ := out.Item["writer"].(*types.AttributeValueMemberS)
	s, _ := out.Item["seq"].(*types.AttributeValueMemberN)
	gotSeq := int64(0)
	if s != nil {
		gotSeq, _ = strconv.ParseInt(s.Value, 10, 64)
	}
	if w == nil || w.Value != writer || gotSeq != seq {
		d.t.Errorf("%s: item %q is %v, want writer %q seq %d", what, id, out.Item, writer, seq)
	}
}

// TestDynamoDBPausedLeaderCannotCommit: leader A runs on a fake clock that
// never moves, so A never renews and still believes it leads. On the real
// DynamoDB Local, B (real clock) sees A's record unchanged for A's lease
// and takes over. A's guarded write must then be refused by the server,
// with nothing applied, and end A's term; its fenced write must be refused
// after B's; B's guarded write commits, and B's token is above A's.
func TestDynamoDBPausedLeaderCannotCommit(t *testing.T) {
	raw := ddbtest.Client(t)
	locks := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	fences := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	d := egItems{t: t, raw: raw, table: ddbtest.NewTable(t, raw, ddbtest.TableSpec{PartitionKey: "id"})}
	frozen := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	a := newEGCandidate(t, locks, fences, "a", frozen)
	b := newEGCandidate(t, locks, fences, "b", nil)
	ctx := t.Context()

	a.run(t)
	ctxA := a.leaderContext(t)
	tokA, ok := election.TokenFromContext(ctxA)
	if !ok || tokA <= 0 || a.e.Token() != tokA {
		t.Fatalf("A's token: context %d (%v), Token() %d", tokA, ok, a.e.Token())
	}
	if err := a.guard(ctx, d.put("ledger", "a", 1)); err != nil {
		t.Fatalf("A's guarded write while it leads: %v", err)
	}
	if err := d.fenced("ext", "a", tokA); err != nil {
		t.Fatalf("A's fenced write while it leads: %v", err)
	}

	began := time.Now()
	b.run(t)
	ctxB := b.leaderContext(t)
	if took := time.Since(began); took < egLease {
		t.Fatalf("B leads after %v, before A's lease of %v", took, egLease)
	}
	tokB, ok := election.TokenFromContext(ctxB)
	if !ok || tokB <= tokA || b.e.Token() != tokB {
		t.Fatalf("B's token %#x (%v, Token() %#x) is not above A's %#x", tokB, ok, b.e.Token(), tokA)
	}
	if err := b.guard(ctx, d.bump("ledger", "b", 1, 2)); err != nil {
		t.Fatalf("B's guarded write: %v", err)
	}
	if err := d.fenced("ext", "b", tokB); err != nil {
		t.Fatalf("B's fenced write: %v", err)
	}

	// A, to whom no time has passed.
	if !a.e.IsLeader() || ctxA.Err() != nil {
		t.Fatalf("A on its frozen clock should still believe it leads (IsLeader %v, context %v)", a.e.IsLeader(), ctxA.Err())
	}
	var ccf *types.ConditionalCheckFailedException
	if err := d.fenced("ext", "a", tokA); !errors.As(err, &ccf) {
		t.Errorf("A's fenced write after B's = %v, want refused by the fence", err)
	}
	a.ft.Reset()
	gctx, cancel := context.WithTimeout(ctx, egPatience)
	defer cancel()
	// Unconditional writes: only the check of the lease record can stop them.
	err := a.guard(gctx, d.put("ledger", "a", 3), d.put("a-only", "a", 1))
	if !errors.Is(err, dynalease.ErrLost) || !errors.Is(err, resourcelock.ErrGuardLost) {
		t.Fatalf("A's guarded write after B took over = %v, want dynalease.ErrLost and ErrGuardLost", err)
	}
	if n := a.ft.Count("TransactWriteItems"); n != 1 {
		t.Errorf("A sent %d TransactWriteItems, want 1: the refusal must come from the server", n)
	}
	d.want("A's refused Put over B's item", "ledger", "b", 2)
	d.want("A's refused Put", "a-only", "", 0)
	if a.e.IsLeader() || a.e.Token() != 0 {
		t.Errorf("after the refusal A: IsLeader %v, Token %d; want no longer leading", a.e.IsLeader(), a.e.Token())
	}
	select {
	case <-ctxA.Done():
	case <-time.After(egPatience):
		t.Fatal("A's leader context was not cancelled by the refused guard")
	}
	select {
	case err := <-a.result:
		if !errors.Is(err, dynalease.ErrLost) {
			t.Errorf("A's Run = %v, want dynalease.ErrLost", err)
		}
		a.result <- err // for the cleanup
	case <-time.After(egPatience):
		t.Fatal("A's Run did not return after its term was lost")
	}

	if err := b.guard(ctx, d.bump("ledger", "b", 2, 3)); err != nil {
		t.Fatalf("B's second guarded write: %v", err)
	}
	d.want("B's second write", "ledger", "b", 3)
	if !b.e.IsLeader() {
		t.Error("B stopped leading")
	}
}

// guard commits items in one transaction with the check of the
// candidate's term (Elector.Guard over the lease's Writes).
func (c *egCandidate) guard(ctx context.Context, items ...types.TransactWriteItem) error {
	return c.e.Guard(ctx, c.lk.Writes(items...))
}
