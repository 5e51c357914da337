// Package clientgo puts client-go's leader election, and so
// controller-runtime's, on a dynalease row: Lock implements client-go's
// resourcelock.Interface over a dynalease resourcelock.Store (DynamoDB
// through dynamodbstore, or the memory store in tests), so that a
// controller's replicas in several clusters, or regions, elect one leader
// through a table outside any cluster.
//
// It lives in a module of its own (github.com/dynalease/dynalease/k8s), so
// that users of the core library never download client-go.
//
// # How the record maps onto the row
//
// The LeaderElectionRecord's holder, lease (whole seconds), acquire and
// renew times (as the holder wrote them) and transitions are the row's
// HolderIdentity, LeaseDuration, AcquireTime, RenewTime and
// LeaderTransitions. A record with no holder (client-go's release on
// cancel) is written as the row marked released by this identity. Every
// write carries a fresh RVN, and the raw bytes Get returns include it, so
// client-go's elector, which detects a change by comparing raw records,
// sees every renewal, even two within one second. A row written here is
// an ordinary dynalease row: a dynalease election.Elector and a client-go
// elector on the same name wait for each other's leases, each watching the
// other's RVN unchanged for a lease before taking over.
//
// # The safety argument, and what is not guaranteed
//
// Update is a compare-and-set on the RVN of the row as this Lock last read
// or wrote it (client-go's fast path renews with Update and no Get), so a
// write based on a stale read never lands. It renews only a row this Lock
// wrote; it takes another holder's row over only as client-go's takeover
// of the row it read (transitions one above the row's), so a renewal that
// meets a row another took (after a Get the elector did not make, say)
// is refused, not turned into a takeover without the wait; and a release
// of a row another took writes nothing. Identities must be unique (see
// Config.Identity): a row naming this identity that this Lock did not
// write is taken as a new acquisition.
//
// When a leader stops acting is client-go's elector's business. It counts
// its term from when a renewal returned, not when it was sent, and stops
// RenewDeadline after that; with ReleaseOnCancel it first tries to release
// the row, for up to RenewDeadline more. A leader whose renewal was
// answered late, and whose next renewals hang, can therefore still believe
// it leads after another took over (k8s/bench measures by how much).
// dynalease's election.Elector counts from the send and stops before
// others may take over; prefer it where that matters.
//
// client-go waits the lease the row shows: the row's lease in whole
// seconds, rounded up. Use whole-second lease durations with client-go
// electors (it writes whole seconds).
package clientgo
