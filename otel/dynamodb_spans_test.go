package dynaotel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/schedule"
)

// A write guarded by the lock, on DynamoDB Local: its span is under the
// caller's, committed, with the lock's key and the items written. The SDK's
// own spans (the contrib otelaws middleware) sit under the library's.
func TestTheSpanOfAGuardedWrite(t *testing.T) {
	rec := newRecorder(t)
	c := ddbtest.Client(t, func(o *dynamodb.Options) {
		otelaws.AppendMiddlewares(&o.APIOptions, otelaws.WithTracerProvider(rec))
	})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: ddbtest.NewTable(t, c, ddbtest.TableSpec{})})
	if err != nil {
		t.Fatal(err)
	}
	data := ddbtest.NewTable(t, c, ddbtest.TableSpec{PartitionKey: "id"})
	locks := client(t, store, "me", rec)
	ctx, request := rec.Tracer("test").Start(context.Background(), "POST /balance")
	l, err := locks.Acquire(ctx, "customer-42")
	if err != nil {
		t.Fatal(err)
	}
	err = l.Guard(ctx, store.Writes(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(data),
		Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "42"}}}}))
	if err != nil {
		t.Fatalf("Guard = %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	request.End()
	s := rec.one(t, "dynalease.lock.guard")
	under(t, s, request)
	wantAttr(t, s, "dynalease.outcome", "committed")
	wantAttr(t, s, "dynalease.lock.key", "customer-42")
	wantAttr(t, s, "dynalease.guard.items", int64(1))
	acquire := rec.one(t, "dynalease.lock.acquire")
	under(t, acquire, request)
	var sdkSpans int
	for _, sp := range rec.exp.GetSpans() {
		if sp.Parent.SpanID() == acquire.SpanContext.SpanID() && strings.HasPrefix(sp.Name, "DynamoDB") {
			sdkSpans++
		}
	}
	if sdkSpans == 0 {
		t.Fatal("no span of the SDK's DynamoDB requests under the acquire's span")
	}
}

// soon names one slot, a moment from now, and none after it.
type soon struct{ at time.Time }

func (s soon) Next(t time.Time) time.Time {
	if t.Before(s.at) {
		return s.at
	}
	return time.Time{}
}

// A job's run: one span per run, the run's context carrying it, with the
// job, slot, attempt and token, and the outcome.
func TestTheSpanOfAJobsRun(t *testing.T) {
	rec := newRecorder(t)
	locks := client(t, memorystore.New(), "me", nil)
	slot := soon{at: time.Now().Add(100 * time.Millisecond).Truncate(time.Millisecond)}
	// A generous deadline: the one slot runs however busy the machine is.
	ran := make(chan struct{})
	var token int64
	s, err := schedule.New(schedule.Config{Locks: locks, TracerProvider: rec}, schedule.Job{Name: "report", Schedule: slot, StartingDeadline: time.Minute,
		Run: func(ctx context.Context, r schedule.Run) error {
			if !trace.SpanContextFromContext(ctx).IsValid() {
				t.Error("the run's context carries no span")
			}
			token = r.Token
			close(ran)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// The schedule names no more slots: Run returns once the run is done.
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	cancel()
	select {
	case <-ran:
	default:
		t.Fatal("the slot did not run (missed: the machine stalled past its starting deadline?)")
	}
	sp := rec.one(t, "dynalease.job.run")
	wantAttr(t, sp, "dynalease.job", "report")
	wantAttr(t, sp, "dynalease.job.attempt", int64(1))
	wantAttr(t, sp, "dynalease.fencing.token", token)
	wantAttr(t, sp, "dynalease.outcome", "succeeded")
}

// A guarded write that finds its lock taken (the row overwritten by
// another owner, and no heartbeat of this client to notice first): the
// guard's span ends lost, with the reason as an event.
func TestTheSpanOfAGuardedWriteThatFindsTheLockLost(t *testing.T) {
	rec := newRecorder(t)
	c := ddbtest.Client(t)
	table := ddbtest.NewTable(t, c, ddbtest.TableSpec{})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	data := ddbtest.NewTable(t, c, ddbtest.TableSpec{PartitionKey: "id"})
	locks, err := lock.New(lock.Config{Store: store, Identity: "me", LeaseDuration: time.Minute, ManualHeartbeats: true, TracerProvider: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close(context.Background())
	ctx := context.Background()
	l, err := locks.Acquire(ctx, "customer-42")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		ddbtest.DefaultPartitionKey: &types.AttributeValueMemberS{Value: "customer-42"},
		"ownerName":                 &types.AttributeValueMemberS{Value: "thief"},
		"recordVersionNumber":       &types.AttributeValueMemberS{Value: "stolen"},
		"leaseDuration":             &types.AttributeValueMemberS{Value: "60000"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Guard(ctx, store.Writes(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(data),
		Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "42"}}}}))
	if !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Guard on a stolen lock = %v, want ErrLost", err)
	}
	s := rec.one(t, "dynalease.lock.guard")
	wantAttr(t, s, "dynalease.outcome", "lost")
	if len(s.Events) == 0 || s.Events[0].Name != "dynalease.lock.lost" {
		t.Fatalf("events %v, want dynalease.lock.lost", s.Events)
	}
}
