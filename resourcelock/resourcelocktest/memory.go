package resourcelocktest

import "github.com/dynalease/dynalease/resourcelock"

// MemoryStore is resourcelock.NewMemoryStore's store with its rows open
// to the test: read as stored, and written or deleted without any
// condition, as another client, a corrupting bug or DynamoDB's TTL might.
// Its ManyStore methods are the memory store's own.
type MemoryStore struct {
	resourcelock.ManyStore
	rows
}

// rows is what the memory store gives a test beyond Store.
type rows interface {
	// Record returns the record called name (a key without a sort key
	// value) as stored, and whether there is one.
	Record(name string) (resourcelock.Record, bool)
	// Item returns the item at key as stored, and whether there is one.
	Item(key resourcelock.Key) (resourcelock.Item, bool)
	// Put stores rec as the record called name, replacing the row.
	Put(name string, rec resourcelock.Record)
	// PutItem stores it, replacing the whole row.
	PutItem(it resourcelock.Item)
	// Delete removes the record called name.
	Delete(name string)
	// DeleteItem removes the row at key.
	DeleteItem(key resourcelock.Key)
}

// NewMemoryStore returns an empty memory store.
func NewMemoryStore() *MemoryStore {
	s := resourcelock.NewMemoryStore()
	return &MemoryStore{ManyStore: s.(resourcelock.ManyStore), rows: s.(rows)}
}
