package resourcelock_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/resourcelock"
	"github.com/dynalease/dynalease/resourcelock/resourcelocktest"
)

func TestMemoryConformance(t *testing.T) {
	store := resourcelock.NewMemoryStore()
	resourcelocktest.RunConformance(t, func(t *testing.T) func(string) resourcelock.Interface {
		name := uuid.NewString()
		return func(id string) resourcelock.Interface { return store.Lock(name, id) }
	})
}
