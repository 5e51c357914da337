package election_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/resourcelock"
)

// An elector on a global table with multi-Region eventual consistency
// never leads: Run returns the refusal, which waiting cannot fix, without
// having written the record. (DynamoDB Local has no global tables; the
// client's DescribeTable is answered as Amazon DynamoDB describes one.)
func TestDynamoDBElectorRefusesAnEventualGlobalTable(t *testing.T) {
	t.Parallel()
	table := ddbtest.NewTable(t, ddbtest.Client(t), ddbtest.TableSpec{})
	ft := faulthttp.New(nil)
	t.Cleanup(ft.CloseIdleConnections)
	ft.Add(faulthttp.Rule{Op: "DescribeTable", Fault: faulthttp.Status(http.StatusOK,
		`{"Table":{"TableName":"`+table+`","TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"key","KeyType":"HASH"}],`+
			`"Replicas":[{"RegionName":"eu-west-1"}],"MultiRegionConsistency":"EVENTUAL"}}`)})
	client := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = ft })
	lease, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	e, err := election.New(election.Config{
		Store: lease, Name: "leader", Identity: "a", LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) { t.Error("led on an MREC global table") },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.Run(ctx); !errors.Is(err, resourcelock.ErrPermanent) {
		t.Fatalf("Run on an MREC global table: %v, want the MREC refusal", err)
	}
	if got := ft.Counts(); got["UpdateItem"] != 0 {
		t.Fatalf("requests %v, want no write", got)
	}
}
