package resourcelock

// Store is a table of leases: one made by dynamodbstore.New or
// memorystore.New, which lock.Config.Store, election.Config.Store and
// schedule take. Its methods beyond Describe are dynalease's own and
// change between versions; lock.New and election.New refuse, with an
// error matching dynalease.ErrInvalid, a Store made otherwise. Storage of
// another kind serves an elector through Interface instead.
type Store interface {
	// Describe returns a short human-readable name of the store, for
	// logs.
	Describe() string
}
