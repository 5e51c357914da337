package dynamodbstore_test

import (
	"time"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// leaseConfig is one lease on a DynamoDB table: the store's Config and
// the lease's key and identity.
type leaseConfig struct {
	Client                                  dynamodbstore.StoreAPI
	Table, Name, Identity                   string
	PartitionKeyAttribute, SortKeyAttribute string
	SortKeyValue                            string
	RequestTimeout                          time.Duration
	FenceTable                              string
	SkipTableCheck                          bool
}

// newLease returns the lease cfg names, as election does over a store:
// the store, then the lease at its key, checked against the table's
// schema before any request.
func newLease(cfg leaseConfig) (*keylease.Lease, error) {
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: cfg.Client, Table: cfg.Table,
		PartitionKeyAttribute: cfg.PartitionKeyAttribute, SortKeyAttribute: cfg.SortKeyAttribute,
		RequestTimeout: cfg.RequestTimeout, FenceTable: cfg.FenceTable, SkipTableCheck: cfg.SkipTableCheck})
	if err != nil {
		return nil, err
	}
	key := resourcelock.Key{Partition: cfg.Name, Sort: cfg.SortKeyValue}
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	return keylease.New(rows.MustOpen(store), key, cfg.Identity)
}
