package election_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/resourcelock"
)

func unfixableElector(t *testing.T, client dynamodbstore.StoreAPI, table string) *election.Elector {
	t.Helper()
	lock, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	e, err := election.New(election.Config{
		Store: lock, Name: "leader", Identity: "a",
		LeaseDuration: 2 * time.Second,
		RenewDeadline: 1500 * time.Millisecond,
		RetryPeriod:   100 * time.Millisecond,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) { <-ctx.Done() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Bug 6 of the engine issue: errors that waiting cannot fix end Run at once
// with their cause (a missing table, a table with another key schema, and
// bug 14's undecodable record). Without the fix Run never returns; the
// 2-minute bound turns that into a failure, whatever the machine's speed.
func TestDynamoDBUnfixableErrorsEndRunWithTheirCause(t *testing.T) {
	t.Parallel()
	raw := ddbtest.Client(t)
	wrongSchema := ddbtest.NewTable(t, raw, ddbtest.TableSpec{PartitionKey: "id"})
	corrupt := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	if _, err := raw.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(corrupt),
		Item: map[string]types.AttributeValue{
			ddbtest.DefaultPartitionKey: &types.AttributeValueMemberS{Value: "leader"},
			"ownerName":                 &types.AttributeValueMemberS{Value: "java-host"},
			"recordVersionNumber":       &types.AttributeValueMemberS{Value: "r1"},
			"leaseDuration":             &types.AttributeValueMemberS{Value: "20s"}, // not a number
		},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		table string
		want  func(error) bool
	}{
		{"missing table", "no-such-table", func(err error) bool { return errors.Is(err, resourcelock.ErrPermanent) }},
		{"another key schema", wrongSchema, resourcelock.Permanent},
		{"undecodable record", corrupt, func(err error) bool { return errors.Is(err, resourcelock.ErrPermanent) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := unfixableElector(t, raw, tc.table)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err := e.Run(ctx)
			// Before ctx ended: a request that timed out on a busy
			// machine may be part of the error (its read-back found the
			// cause), so the test asks ctx, not the error, whether the
			// wait ran out.
			if err == nil || ctx.Err() != nil || !tc.want(err) {
				t.Fatalf("Run = %v, want the cause at once", err)
			}
			if last, since := e.LastError(); !tc.want(last) || since.IsZero() {
				t.Errorf("LastError = %v since %v, want the cause", last, since)
			}
			t.Logf("Run: %v", err)
		})
	}
}

// An unreachable table is retried for as long as the caller wants (as
// client-go's elector does), with the cause exposed by LastError.
func TestDynamoDBUnreachableTableIsReportedByLastError(t *testing.T) {
	t.Parallel()
	e := unfixableElector(t, ddbtest.UnreachableClient(t), "locks")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- e.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for {
		if err, since := e.LastError(); err != nil {
			if !errors.Is(err, syscall.ECONNREFUSED) || since.Before(start) {
				t.Fatalf("LastError = %v since %v, want the refused connection", err, since)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no LastError after a minute of refused connections")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned on a transient error: %v", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}
