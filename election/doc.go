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
// A free record (missing, or released by its holder) is taken by a write
// conditioned on its being free, not on an RVN; a candidate that has not
// read the record yet sends one blindly. Sent while another leads, such a
// write may land after that leader's release, and then rightly wins: a
// leader ends its term before it sends its release. The new term begins
// when its write is confirmed, and its validity counts from the write's
// send, which only shortens it.
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
// # Priority and hand-over
//
// A candidate may stand on the election's row (Config.Stand, or a
// Priority other than zero): it keeps an entry among the row's candidates
// with its identity, its priority and an
// RVN of the entry's own, which each of its polls rewrites. An entry takes
// nothing: writing it changes neither the record nor the row's RVN, so a
// leader's renewal, conditioned on its own RVN, is never refused by one.
//
// The leader reads the entries in the answer of every renewal, and times
// each entry's RVN on its own clock, as a waiter times a holder's: an
// entry whose RVN an answer sent at p did not show was written after p, so
// it counts as live for 3 × RetryPeriod from p. (A standing candidate
// writes its entry at its first poll at least half a RetryPeriod after
// its last write: at most 1.7 × RetryPeriod apart.) An entry seen once
// and never changed is not live: it may be a dead candidate's.
//
// Entries do not outlive their candidates. Every Run withdraws its entry
// when it returns. A candidate that dies without withdrawing leaves an
// entry that stops changing: a standing candidate's stand drops entries
// whose RVN it saw unchanged for LeaseDuration + 3 × RetryPeriod, except
// the current entry of the row's holder (the one that changed last: a
// leader does not rewrite its entry while it leads). A candidate drops at
// once the entries of its own identity with another ticket, an earlier
// process's (a crash under a stable identity, such as a StatefulSet pod's
// name). So with any candidate standing, a dead one's entry leaves the
// row within LeaseDuration + 3 × RetryPeriod plus half a RetryPeriod.
//
// Invariant: a term ends before any other begins, a step-down included.
// The argument: a leader steps down only from inside its term, at a safe
// point. It cancels the context of OnStartedLeading, keeps renewing while
// the work returns (for at most RenewDeadline, as after Run's cancel),
// ends the term, and only then writes the hand-over: a write conditioned
// on its own identity and RVN that names the successor as holder, with the
// successor's ticket (resourcelock.Record.HandedTo) and a lease of
// 2 × RetryPeriod. The successor leads only by its own write, conditioned
// on the handed RVN, and counts its term from that write's send, as any
// takeover does; the handed RVN exists only once the old term has ended.
// Nobody holds a handed row: a hand-over the successor does not confirm
// (it died, or missed it) is taken over by any candidate that has watched
// the handed RVN for its short lease, so an unconfirmed hand-over costs
// two RetryPeriods, not a lease.
//
// When it steps down: after a confirmed renewal, when a live entry has a
// priority strictly above the leader's own (Config.Priority, whether or not
// the leader stands), and the term has lasted MinTerm. The entry of
// highest priority is chosen, the one seen first among equals. Equal
// priorities never preempt each other, and a term steps down once at most.
// Elector.HandOver steps down the same way, at any time, for the live
// candidate it names (or the best live one); Run then returns an error
// matching ErrHandedOver. Every Run withdraws its entry when it returns,
// and declines a hand-over to it that it saw but did not confirm (it
// marks the row released, by a write conditioned on the handed RVN).
// A chosen candidate that stays live without confirming (its fencing
// request keeps failing, say) is chosen again by the next term: a
// step-down every MinTerm, plus the unconfirmed hand-over.
//
// What this does not guarantee: that the candidate of highest priority
// leads. A candidate that finds the row free takes it whatever its
// priority, and a candidate of higher priority waits for MinTerm. A
// candidate whose entry stops changing (a partition, a long pause) is
// passed over, and one that dies after being chosen costs the unconfirmed
// hand-over. Electors of earlier versions, and an AWS Java lock client,
// neither stand nor read entries: such a leader never steps down, and
// such a candidate is never handed the lease but takes a handed row
// nobody confirms, as it takes any row whose RVN stays unchanged for its
// lease. Liveness is timed on the leader's clock only, never from times
// written by other hosts.
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
