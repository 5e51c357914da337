package resourcelock_test

import (
	"testing"

	"github.com/dynalease/dynalease/internal/ddbtest"
	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/resourcelocktest"
)

// Runs without DynamoDB.
func TestMemoryStoreConformance(t *testing.T) {
	resourcelocktest.RunStoreConformance(t, func(*testing.T) resourcelock.Store {
		return resourcelock.NewMemoryStore()
	})
}

// Every subtest gets a table of its own: Scan must see only its rows.
// DynamoDB Local creates a table in a few milliseconds.
func TestDynamoDBStoreConformance(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	resourcelocktest.RunStoreConformance(t, func(t *testing.T) resourcelock.Store {
		s, err := resourcelock.NewDynamoDBStore(resourcelock.DynamoDBStoreConfig{
			Client: c,
			Table:  ddbtest.NewTable(t, c, ddbtest.TableSpec{}),
		})
		if err != nil {
			t.Fatalf("NewDynamoDBStore: %v", err)
		}
		return s
	})
}
