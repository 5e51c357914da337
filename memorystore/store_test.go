package memorystore_test

import (
	"testing"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/rowstest"
	"github.com/dynalease/dynalease/memorystore"
)

// The memory store keeps the contract as DynamoDB's store does.
func TestMemoryStoreConformance(t *testing.T) {
	newStore := func(*testing.T) rows.Store { return rows.MustOpen(memorystore.New()) }
	rowstest.RunStoreConformance(t, rowstest.StoreSuite{New: newStore, NewWithSortKey: newStore})
}
