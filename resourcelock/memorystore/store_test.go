package memorystore_test

import (
	"testing"

	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/memorystore"
	"github.com/dynalease/dynalease/resourcelock/resourcelocktest"
)

// The memory store keeps the contract as DynamoDB's store does.
func TestMemoryStoreConformance(t *testing.T) {
	newStore := func(*testing.T) resourcelock.Store { return memorystore.New() }
	resourcelocktest.RunStoreConformance(t, resourcelocktest.StoreSuite{New: newStore, NewWithSortKey: newStore})
}
