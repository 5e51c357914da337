package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// DynamoDB Local has no global tables: these tests answer the client's
// DescribeTable as Amazon DynamoDB describes a global table's replica, and
// send every other request to DynamoDB Local.

// globalDescription is a DescribeTable answer for table as a global table
// with replicas in two other regions, of the given consistency ("EVENTUAL"
// or "STRONG").
func globalDescription(t *testing.T, table, consistency string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"Table": map[string]any{
		"TableName":              table,
		"TableStatus":            "ACTIVE",
		"KeySchema":              []map[string]string{{"AttributeName": "key", "KeyType": "HASH"}},
		"Replicas":               []map[string]string{{"RegionName": "us-east-2"}, {"RegionName": "us-west-2"}},
		"MultiRegionConsistency": consistency,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// globalClient returns a lock client on e's table whose DescribeTable is
// answered as a global table of consistency, with its transport.
func globalClient(t *testing.T, e *ddbEnv, consistency string, opts ...lock.Option) (*lock.Client, *faulthttp.Transport) {
	t.Helper()
	ft := faulthttp.New(nil)
	t.Cleanup(ft.CloseIdleConnections)
	ft.Add(faulthttp.Rule{Op: "DescribeTable", Fault: faulthttp.Status(http.StatusOK, globalDescription(t, e.table, consistency))})
	sdk := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = ft }, quickRetries)
	all := append([]lock.Option{lock.WithOwnerName(fmt.Sprintf("global-%d", e.seq.Add(1))),
		lock.WithLeaseDuration(untimedLease), lock.WithRequestTimeout(untimedTimeout), lock.WithHeartbeatPeriod(0)}, opts...)
	c, err := lock.NewOn(sdk, e.table, all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, ft
}

// An MREC global table is refused at the client's first request, before
// any write, with an error waiting cannot fix; unless the caller states
// that every client writes through one region.
func TestDynamoDBEventualGlobalTableIsRefused(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c, ft := globalClient(t, e, "EVENTUAL")
	_, err := c.Acquire(t.Context(), "k")
	if !errors.Is(err, resourcelock.ErrPermanent) || !resourcelock.Permanent(err) || !strings.Contains(err.Error(), "us-west-2") {
		t.Fatalf("Acquire on an MREC global table: %v, want the MREC refusal naming the replicas, permanent", err)
	}
	if got := ft.Counts(); got["UpdateItem"] != 0 || got["DescribeTable"] != 1 {
		t.Fatalf("requests %v, want one DescribeTable and no write", got)
	}
	if _, err := c.Acquire(t.Context(), "k"); !errors.Is(err, resourcelock.ErrPermanent) {
		t.Fatalf("a second Acquire: %v, want the refusal kept", err)
	}
	if got := ft.Counts()["DescribeTable"]; got != 1 {
		t.Fatalf("%d DescribeTable requests, want the one answer kept", got)
	}

	single, _ := globalClient(t, e, "EVENTUAL", lock.WithSingleWriterRegion())
	l, err := single.Acquire(t.Context(), "k")
	if err != nil {
		t.Fatalf("Acquire with SingleWriterRegion: %v", err)
	}
	mustRelease(t, l)
}

// On an MRSC global table, leases work as on any table; guarded writes
// and sets of keys, which are transactions, fail before sending; so do
// TTLs. The table is described once.
func TestDynamoDBStrongGlobalTable(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c, ft := globalClient(t, e, "STRONG")
	l, err := c.Acquire(t.Context(), "k")
	if err != nil {
		t.Fatalf("Acquire on an MRSC table: %v", err)
	}
	if err := l.Heartbeat(t.Context()); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	err = l.GuardItems(t.Context(), types.TransactWriteItem{Put: &types.Put{TableName: aws.String(e.table),
		Item: map[string]types.AttributeValue{e.pk: &types.AttributeValueMemberS{Value: "app"}}}})
	if !errors.Is(err, dynalease.ErrInvalid) || !l.IsHeld() {
		t.Fatalf("Guard on an MRSC table: %v (held %t), want the MRSC refusal and the lock kept", err, l.IsHeld())
	}
	if _, err := c.AcquireSet(t.Context(), []string{"a", "b"}); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("AcquireSet on an MRSC table: %v, want the MRSC refusal", err)
	}
	if _, err := c.AcquirePermit(t.Context(), "pay", 2); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("AcquirePermit on an MRSC table: %v, want the MRSC refusal", err)
	}
	mustRelease(t, l)
	got := ft.Counts()
	if got["TransactWriteItems"] != 0 || got["TransactGetItems"] != 0 || got["DescribeTable"] != 1 {
		t.Fatalf("requests %v, want no transaction and one DescribeTable", got)
	}

	ttl, _ := globalClient(t, e, "STRONG", lock.WithTTL(time.Hour))
	if _, err := ttl.Acquire(t.Context(), "t"); !errors.Is(err, dynalease.ErrInvalid) || !strings.Contains(err.Error(), "MRSC") {
		t.Fatalf("Acquire with a TTL on an MRSC table: %v, want refused naming MRSC", err)
	}
}

// A ReplicatedWriteConflictException (another region's write to the same
// item under way, on an MRSC table) is contention: the heartbeat fails,
// the lock is not lost, and the next heartbeat renews it.
func TestDynamoDBReplicatedWriteConflictIsNotALoss(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c, ft := globalClient(t, e, "STRONG")
	l, err := c.Acquire(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	ft.Add(faulthttp.Rule{Op: "UpdateItem", Times: 1, Fault: faulthttp.APIError(http.StatusBadRequest, "ReplicatedWriteConflictException", "a conflicting write in another region")})
	err = l.Heartbeat(t.Context())
	if err == nil || errors.Is(err, dynalease.ErrLost) || resourcelock.Permanent(err) || !l.IsHeld() {
		t.Fatalf("a heartbeat refused by a replicated write conflict: %v (held %t), want a transient failure, still held", err, l.IsHeld())
	}
	if err := l.Heartbeat(t.Context()); err != nil {
		t.Fatalf("the next heartbeat: %v", err)
	}
	mustRelease(t, l)
}
