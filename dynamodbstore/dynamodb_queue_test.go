package dynamodbstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/resourcelock"
)

func queueStore(t *testing.T) (*dynamodbstore.Store, *dynamodb.Client, string) {
	c := ddbtest.Client(t)
	table := ddbtest.NewTable(t, c, ddbtest.TableSpec{})
	s, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, table
}

// Conditions on the queue of a row that has none fail as conditions, not
// as validation errors.
func TestDequeueOnARowWithoutAQueue(t *testing.T) {
	s, _, _ := queueStore(t)
	ctx := context.Background()
	k := resourcelock.Key{Partition: "k"}
	cur, err := rows.MustOpen(s).Create(ctx, k, resourcelock.Record{HolderIdentity: "a", RVN: "r1", LeaseDuration: time.Second}, rows.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := resourcelock.Record{HolderIdentity: "a", RVN: "r2", LeaseDuration: time.Second, Released: true}
	_, err = rows.MustOpen(s).Update(ctx, k, resourcelock.Precondition{RVN: cur.RVN, HolderIdentity: "a"}, rec,
		rows.WriteOptions{Dequeue: &rows.Dequeue{Tickets: []string{"x"}, All: true}})
	t.Logf("All with a ticket, no queue: %v", err)
	if !errors.Is(err, resourcelock.ErrConflict) {
		t.Errorf("want ErrConflict, got %v", err)
	}
	_, err = rows.MustOpen(s).Leave(ctx, k, "x", record.MaxQueueLength-1)
	t.Logf("Leave at the last index, no queue: %v", err)
	if !errors.Is(err, resourcelock.ErrConflict) {
		t.Errorf("want ErrConflict, got %v", err)
	}
}

// A full queue of the longest identities beside MaxDataBytes of data fits
// DynamoDB's 400 KB item: the holder's writes still land.
func TestFullQueueWithLargeDataFitsTheItem(t *testing.T) {
	s, _, _ := queueStore(t)
	ctx := context.Background()
	k := resourcelock.Key{Partition: "big"}
	cur, err := rows.MustOpen(s).Create(ctx, k, resourcelock.Record{HolderIdentity: "a", RVN: "r1", LeaseDuration: time.Second}, rows.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Join until the queue is full: a Join the SDK sent again after an
	// attempt that landed unseen (a busy machine) appends twice.
	for i := 0; ; i++ {
		id := fmt.Sprintf("%04d", i) + strings.Repeat("w", record.MaxIdentityBytes-4)
		_, err := rows.MustOpen(s).Join(ctx, k, rows.Waiter{Ticket: uuid.NewString(), Identity: id, Lease: time.Second})
		if err == nil && i < record.MaxQueueLength {
			continue
		}
		it, gerr := rows.MustOpen(s).Get(ctx, k)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if len(it.Queue) != record.MaxQueueLength || (err != nil && !errors.Is(err, resourcelock.ErrConflict)) {
			t.Fatalf("Join %d: %v, with %d waiters queued; want the queue full at %d, then refused", i, err, len(it.Queue), record.MaxQueueLength)
		}
		break
	}
	rec := resourcelock.Record{HolderIdentity: "a", RVN: "r2", LeaseDuration: time.Second, Data: make([]byte, record.MaxDataBytes)}
	_, err = rows.MustOpen(s).Update(ctx, k, resourcelock.Precondition{RVN: cur.RVN, HolderIdentity: "a"}, rec, rows.WriteOptions{})
	if err != nil {
		t.Fatalf("holder's renewal with MaxDataBytes of data over a full queue: %v (permanent: %v)", err, resourcelock.Permanent(err))
	}
}

// An application attribute named "queue" (an AWS Java client's additional
// attribute) is an application attribute: the queue's attribute names are
// dynalease's own.
func TestJavaAdditionalAttributeNamedQueue(t *testing.T) {
	s, c, table := queueStore(t)
	ctx := context.Background()
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"key":                 &types.AttributeValueMemberS{Value: "j"},
		"ownerName":           &types.AttributeValueMemberS{Value: "java"},
		"leaseDuration":       &types.AttributeValueMemberS{Value: "20000"},
		"recordVersionNumber": &types.AttributeValueMemberS{Value: uuid.NewString()},
		"queue":               &types.AttributeValueMemberS{Value: "billing-jobs"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rows.MustOpen(s).Get(ctx, resourcelock.Key{Partition: "j"}); err != nil {
		t.Fatalf("Get of a Java row with an additional attribute \"queue\": %v (permanent: %v)", err, resourcelock.Permanent(err))
	}
}
