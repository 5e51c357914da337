package dynamodbstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rowstest"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// Every subtest gets a table of its own: Scan must see only its rows.
// DynamoDB Local creates a table in a few milliseconds.
func TestDynamoDBStoreConformance(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	newStore := func(spec ddbtest.TableSpec, sortKey string) func(t *testing.T) rows.Store {
		return func(t *testing.T) rows.Store {
			s, err := dynamodbstore.New(dynamodbstore.Config{
				Client:           c,
				Table:            ddbtest.NewTable(t, c, spec),
				SortKeyAttribute: sortKey,
				FenceTable:       ddbtest.NewTable(t, c, ddbtest.TableSpec{}),
			})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return rows.MustOpen(s)
		}
	}
	rowstest.RunStoreConformance(t, rowstest.StoreSuite{
		New:            newStore(ddbtest.TableSpec{}, ""),
		NewWithSortKey: newStore(ddbtest.TableSpec{SortKey: "sk"}, "sk"),
		NewUnreachable: func(t *testing.T) rows.Store {
			s, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: "no-such-table-" + uuid.NewString()})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return rows.MustOpen(s)
		},
		Reserved: []string{"ownerName", "leaseDuration", "recordVersionNumber", "data", "isReleased", "leaderTransitions", "acquireTime", "renewTime", "fenceGeneration", "acquisitionId", "dynaleaseQueue", "dynaleaseHandoff", dynamodbstore.DefaultPartitionKeyAttribute, dynamodbstore.DefaultTTLAttribute},
		// Values of every kind an application attribute may hold.
		AttributeValues: []any{
			&types.AttributeValueMemberS{Value: "billing"},
			&types.AttributeValueMemberN{Value: "42"},
			&types.AttributeValueMemberB{Value: []byte{0, 1, 2, 255}},
			&types.AttributeValueMemberBOOL{Value: true},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{
				&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberN{Value: "7"},
			}},
			&types.AttributeValueMemberN{Value: "43"},
			&types.AttributeValueMemberS{Value: "new"},
		},
	})
}

// Both stores of this package return the row a failed condition found, so
// a writer settles the write without reading; the conformance suite only
// checks that a row, when returned, is the right one.
func TestDynamoDBAndMemoryStoresReturnTheRowOnConflict(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	stores := map[string]func(t *testing.T) rows.Store{
		"memory": func(*testing.T) rows.Store { return rows.MustOpen(memorystore.New()) },
		"DynamoDB": func(t *testing.T) rows.Store {
			s, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: ddbtest.NewTable(t, c, ddbtest.TableSpec{})})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return rows.MustOpen(s)
		},
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			ctx := context.Background()
			k := resourcelock.Key{Partition: "conflict"}
			first, err := s.Create(ctx, k, resourcelock.Record{HolderIdentity: "a", RVN: uuid.NewString(), LeaseDuration: time.Minute}, rows.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Create(ctx, k, resourcelock.Record{HolderIdentity: "b", RVN: uuid.NewString(), LeaseDuration: time.Minute}, rows.WriteOptions{})
			if !errors.Is(err, resourcelock.ErrConflict) {
				t.Fatalf("Create while held: %v, want ErrConflict", err)
			}
			got, ok := rows.CurrentItem(err)
			if !ok {
				t.Fatalf("Create while held: %v carries no row", err)
			}
			if got.RVN != first.RVN || got.HolderIdentity != "a" || got.AcquisitionID != first.AcquisitionID {
				t.Errorf("the row carried = %+v, want %+v", got.Record, first.Record)
			}
		})
	}
}
