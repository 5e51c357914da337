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
// elector on the same name exclude each other, each waiting for the
// other's RVN to stay unchanged for a lease before taking over.
//
// # The safety argument, and what is not guaranteed
//
// Update is a compare-and-set on the RVN of the row as this Lock last read
// or wrote it (client-go's fast path renews with Update and no Get), so a
// write based on a stale read never lands: no two candidates acquire from
// one state of the row. That is all this package adds; when a leader stops
// acting is client-go's elector's business. That elector counts its term
// from when a renewal returned, not when it was sent, and a candidate
// takes over after its own LeaseDuration since it saw the row change: a
// leader whose renewals hang can still believe it leads after another took
// over. dynalease's election.Elector counts from the send and stops before
// others may take over; prefer it where that matters (see the module's
// README section).
//
// Give client-go's elector a LeaseDuration at least the lease every other
// holder of the row writes (a dynalease elector on the same name included):
// client-go waits its own LeaseDuration, not the one in the row.
package clientgo
