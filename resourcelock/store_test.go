package resourcelock_test

import (
	"testing"

	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/resourcelocktest"
)

// Runs without DynamoDB.
func TestMemoryStoreConformance(t *testing.T) {
	newStore := func(*testing.T) resourcelock.Store { return resourcelock.NewMemoryStore() }
	resourcelocktest.RunStoreConformance(t, resourcelocktest.StoreSuite{New: newStore, NewWithSortKey: newStore})
}
