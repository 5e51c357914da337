// Package resourcelocktest checks an implementation of
// resourcelock.Interface against its contract: RunInterfaceConformance,
// which a backend's author runs against theirs before giving it to an
// election.Elector (election.Config.Lease). dynalease runs it against the
// leases of its own stores, on the memory store and DynamoDB Local.
package resourcelocktest
