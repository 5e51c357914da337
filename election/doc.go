// Package election elects one leader among candidates that share a
// resourcelock.Interface, in the manner of Kubernetes' client-go leader
// election, with leases that never compare clocks across hosts.
//
// # How a lease works
//
// Every write of the record carries a fresh record version number (RVN). A
// candidate notes, on its own monotonic clock, when a read first returned an
// RVN, and takes the lease over only after that same RVN has stayed in the
// record for the holder's lease duration, with a write conditioned on it. The
// leader renews every RetryPeriod and counts its term from the moment it
// sent the renewal that was confirmed: it is leader until RenewDeadline after
// that send time. Since a renewal lands no earlier than it was sent, and a
// candidate starts counting no earlier than it landed, the leader's term ends
// before anyone may take over as long as LeaseDuration exceeds RenewDeadline
// by more than the clocks' rates can drift apart over that time (New
// requires at least 1% of RenewDeadline, and 1 ms: room for fifty times
// what real clocks drift). Wall-clock times in the record are never used for this.
//
// # When a standby reads
//
// A failover is the lease duration plus the time between the leader's
// last renewal and a standby's first read of it, since the standby counts
// from that read. A standby therefore reads in the leader's rhythm: the
// leader renews one RetryPeriod after its previous renewal began, so each
// new RVN a standby sees narrows down when the next one will land, and the
// standby reads just after it does (within a few round trips once it has
// seen four or five renewals), plus once a period at a random time, so
// that a release is seen as soon as with random reads. That is about two
// and a half reads per RetryPeriod per standby, against about one with
// reads at random times; a leader that renews at another period (a
// different RetryPeriod) turns the rhythm off for the standbys that watch
// it, which then read once per jittered RetryPeriod. The rhythm only moves
// when a standby reads: the takeover still counts from the standby's own
// first sighting of the RVN it takes over, so nothing above depends on it.
//
// A write whose answer is lost (a timeout, a reset connection, or a
// conditional failure caused by the SDK retrying an attempt that had
// landed) is resolved by reading the record: an RVN this Run tried to write
// means that write landed, and the term counts from that write's send time.
// Only an RVN written by this Run proves ownership: a record that names this
// candidate's identity, left by an earlier process with the same name, is
// waited out like any other.
//
// # What is not guaranteed
//
// A lease bounds how long a leader believes it leads; it cannot bound what
// the leader's process does with that belief. A leader that checked IsLeader,
// or started an action while its context was live, and was then paused (a
// garbage-collection pause, SIGSTOP, a stalled virtual machine, a slow disk)
// can carry the action out after its term ended and another leader took
// over. Only the resource acting on the leader's behalf can refuse such late
// actions, by checking a fencing token or by committing writes in one
// transaction with a check of the lease record.
//
// Time during which the whole machine is suspended is not counted by Go's
// monotonic clock; a host suspended while leading may wake believing it
// still has time left. The safety argument also assumes that clock rates
// differ by far less than 1%.
//
// OnStoppedLeading and the cancellation of the leader's context are
// notifications: they are delivered promptly but nothing forces the
// leader's work to stop. Check reports a leader whose work outlives its
// term.
package election
