package resourcelock_test

import (
	"testing"

	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/resourcelocktest"
)

// Runs without DynamoDB.
func TestMemoryStoreConformance(t *testing.T) {
	resourcelocktest.RunStoreConformance(t, func(*testing.T) resourcelock.Store {
		return resourcelock.NewMemoryStore()
	})
}
