// Package lock is a fine-grained lock client on a DynamoDB table: lock any
// string key (a customer, a job, a campaign) for a while, keep it alive with
// background heartbeats, and learn at once when it is lost.
//
// Its rows are those of the AWS Java DynamoDB Lock Client (attributes key,
// ownerName, leaseDuration in milliseconds, recordVersionNumber, data,
// isReleased), so Go and Java hosts can share one lock table: a Java holder
// blocks an Acquire here until it releases or stays silent for its lease,
// and the other way round.
//
// # Leases
//
// Every write of a lock row carries a fresh record version number (RVN).
// A waiting client notes, on its own monotonic clock, when it first read a
// holder's RVN, and takes the lock over only after that RVN has stayed
// unchanged for the lease written in the row, with a write conditioned on
// it. The holder counts its lock valid until its lease minus a safety
// margin after it sent its last confirmed write (ValidUntil); heartbeats
// move that bound. No wall-clock time is compared between hosts.
//
// Every write whose answer is lost, a conditional failure included (the
// AWS SDK retries on its own, and the retry of a write that landed fails
// its condition), is resolved by reading the row back: an RVN this client
// tried to write means the write landed.
//
// # Fair waiting
//
// By default waiters get a lock in about the order they started waiting,
// and a client that releases and asks again queues behind them once its
// stint is over (see Stints; Config.Unfair turns fair waiting off). The row keeps a queue of waiters
// (attribute dynaleaseQueue: ticket, identity, lease) and, after a
// hand-over, the ticket handed to (attribute dynaleaseHandoff):
//   - Join: a waiter that finds the lock held appends its entry (one
//     write per wait, conditioned only on the row existing and not free:
//     held, or kept for a stint).
//   - Wait: it reads at a pace set by its place: the head every refresh
//     period, the n-th about when the n places ahead will have passed, at
//     the pace it has seen the queue move, never rarer than the lease it
//     watches.
//   - Hand-over: a release with others queued, once the releaser's stint
//     is over, does not mark the row released; it writes the row naming the queue's head as holder, with
//     the head's lease, a fresh RVN Rh and the head's ticket, taking the
//     head out of the queue, conditioned as every release on this identity
//     and its RVN, and on the queue's head as the releaser last saw it
//     (a waiter that joined unseen makes it write again).
//   - Confirm: the head, reading a hand-over to it, writes its own RVN
//     conditioned on Rh alone, like a takeover, and holds from that
//     write's send.
//   - A head that never confirms (it died) is, to everybody else, a
//     silent holder at Rh: once Rh has stayed unchanged for the head's
//     lease on a waiter's own clock, the next waiter takes it over. A dead
//     waiter thus delays the others by about its lease when its turn
//     comes, once; a waiter that gives up leaves the queue.
//
// # Stints
//
// A hand-over costs the head's next poll, so a queue that handed the lock
// over at every release would spend about a poll period per acquisition.
// As a sync.Mutex lets the goroutine that unlocks lock again ahead of its
// waiters until one has waited too long, a fair client has a stint, which
// bounds the waiters' wait rather than its own hold:
//   - It begins when the holder first sees waiters in the row's queue
//     since it last saw it empty: in the answer of the write that
//     acquired the row (a create, a takeover, a confirmed hand-over), of
//     a heartbeat, or of its release (whose expectation of the queue is
//     then refused). It lasts Config.Stint on this client's clock (one
//     refresh period by default; a negative Stint has none), and a
//     taking back below continues it.
//   - Within it, a release that finds others queued marks the row
//     released and leaves their entries in the queue: a row kept for the
//     stint. The client's next Acquire (or TryAcquire) of the key within
//     the stint takes it back in one write, conditioned on the released
//     RVN, without reading; once the stint has passed it queues instead.
//     Each taking back is a new acquisition (a new fencing token), and a
//     queued waiter's wait budget starts again at it, as at a change of
//     holder.
//   - A row kept for the stint is not free: Create
//     refuses it, a newcomer joins its queue, and a waiter behind the head
//     sees it as held and takes it over only after its RVN has stayed
//     unchanged for the row's lease (a dead head). The queue's head takes
//     it at its next poll, by a write conditioned on its RVN that takes the
//     head's entry out: the releaser and the head may both try, and at
//     most one of the two writes lands.
//   - The first release after the stint hands the lock to the queue's
//     head, which begins the head's own stint. The head expects that
//     hand-over about its own Stint after it became the head (a fleet
//     shares one configuration), and reads every quarter refresh period
//     from one and a half periods before then to one and a half after: a
//     hand-over costs it about an eighth of a period instead of half of
//     one.
//
// The bound this gives a waiter: the holder sees a waiter at its next
// write, a release or a heartbeat, so within a hold H; each stint ends with
// a hand-over at the first release after Stint, and the head confirms it
// at its next poll. With holds of at most H, a refresh period P (1.2 P
// with its jitter) and requests of at most R, a waiter with n waiters
// ahead of it in the queue is handed the lock within about
// H + (n+1) × (Stint + H + 1.2 P + 2R) of joining, plus a lease for each
// dead waiter ahead; with the default Stint of one refresh period, about
// H + (n+1) × (2.2 P + H + 2R). A waiter that is not
// in the queue (it found the queue full, or an AWS Java client dropped
// it) has no such bound.
//
// Invariant: the queue and the hand-over are advice for order and
// liveness. No write of them, and no read of them, gives anybody a hold:
// every holder has proven its hold by a write of its own RVN, conditioned
// on the RVN it last saw, whose send time starts its validity.
//
// Why it is safe: the releaser's hold ends before it sends the hand-over
// (or the release that keeps the row for its stint), as every release's
// does. The head holds only once its own write,
// conditioned on Rh, lands; every other write that could take the lock
// (a later waiter's takeover, an AWS Java client's takeover of a stale
// row) is conditioned on Rh too, and DynamoDB applies at most one of them.
// Between the hand-over and its confirmation nobody holds the lock, so no
// clock is compared: the wait for a dead head decides only when the
// others stop waiting for it, by the RVN rule above. A waiter that reads
// its own identity in a row at an RVN it did not write holds nothing
// until its own write lands.
//
// AWS Java lock clients on the same table ignore the queue: they may jump
// it (a Java acquire of a released or stale row), never cause two holders.
// A Java acquire by PutItem (the default) rewrites the whole row and drops
// the queue; waiters then find their entry gone and join again. One by
// UpdateItem (updateExistingLockRecord) keeps the queue, and may leave a
// stale handoff, which no waiter confirms: the row names the Java holder.
// A Java client sees a handed row as held, and takes it over after the
// head's lease only if the head never confirms. A release with WithDeleteOnRelease deletes the row, queue
// included, and hands nothing over.
//
// # Sets of keys
//
// AcquireSet takes several keys as one lock: all of them or none, never
// some. It runs the one kernel over a set of rows, which folds the keys'
// rows into one lease (see its doc for the folding rules and the
// safety argument): every acquisition, heartbeat and release is one
// transaction over all the rows, conditioned row by row on the state the
// client saw, so two clients taking overlapping sets, in any order,
// neither deadlock nor hold part of a set while they wait. A key held by
// another holder (an AWS Java client, a lock on that key alone, another
// set) is taken over with the others once its RVN has stayed unchanged
// for its holder's lease on this client's clock; the set waits for the
// longest. Within one client, a set takes its keys' claims all at once or
// none, so overlapping Acquire and AcquireSet calls of one client never
// deadlock either. The set is lost when any of its rows is taken,
// released or deleted by another, and the LostError names that key.
// Guard over a set checks every row in its transaction.
//
// # Semaphores
//
// AcquirePermit takes one of n permits of a name. The semaphore is n
// ordinary lock rows, its slots ("NAME#permit-0" to "NAME#permit-N-1"), and a permit is the lock on one slot: each slot is held by at
// most one holder at a time, by the argument above, and nobody takes a
// slot outside 0 to n-1, so at most n hold permits. No count is read and
// then written, so no race between acquirers can exceed it. A waiter
// reads every slot in one request per poll and takes a free one, or one
// whose RVN it watched unchanged for its holder's lease.
//
// n is each caller's, not stored with the semaphore. A caller with a
// smaller n than another takes only the lower slots (and waits while they
// are held, even with higher ones free); a caller with a larger n may
// hold a slot the others never look at, so the semaphore then admits up
// to the largest n in use. Lowering n while permits are held keeps every
// permit held until it is released or lost: the holders of slots at or
// above the new n finish, and callers with the new n never take those
// slots again. Raising n admits new holders at once. Every client of one
// semaphore should use one n, changed by a rolling restart, with the
// bound above meanwhile.
//
// # Read and write
//
// AcquireShared takes a shared hold of a key (a reader); Acquire takes
// the key exclusively (a writer). Any number of readers hold a key at
// once, and a writer holds it alone.
//
// The key keeps its one row. While readers hold it, the row names the
// holder "dynalease:readers", and each reader
// is an entry of the row with a ticket and an RVN of
// its own: a reader's acquisition adds its entry, its heartbeat gives the
// entry (and the row) a new RVN conditioned on the entry's, its release
// removes the entry, and the last release marks the row released. Readers
// do not wait for each other (a join or a release refused because other
// readers came or went is sent again at once with the row found), and
// every one of their writes changes the row's RVN. The row's lease is at
// least every entry's: joins raise it, nothing lowers it while readers
// hold.
//
// Why a writer never holds with a reader: a reader joins only a row that
// is missing, free or held by readers with no writer queued ahead of it,
// or whose RVN it watched unchanged for the row's lease (a silent
// holder's), or that a writer's release handed to its wait, in the write
// that adds its entry; no live writer holds such a row. A writer takes
// a row of readers only by a write conditioned on the row's RVN, after
// watching that RVN unchanged for the row's lease on its own clock (or
// once the last reader released it). Every reader's heartbeat changes
// the row's RVN, so the writer's write lands only after every reader's
// last confirmed write by at least that reader's lease: each reader,
// counting its validity from the send of that write, stopped holding
// before. A Java client or an older dynalease sees the same row held by
// "dynalease:readers" and renewed, and takes it only the same way.
//
// Readers and writers wait in one queue, the key's, and are served in
// its order (with fair waiting, the default). A reader that finds a
// writer holding, or a writer queued, queues: its entry is marked a
// reader's. Readers queued ahead of every
// writer join a row of readers at their next poll (their join removes
// their entry); a reader queued behind a writer waits for that writer's
// turn, so new readers never overtake a waiting writer. A writer's release
// sees the readers queued, as it sees writers: within its stint it may
// take the key back, and the first release after the stint hands the
// key to the queue's head, a reader as well as a writer, after which the
// readers queued behind that one join it. So a reader waits no longer
// behind a writer that keeps taking the key than an exclusive waiter
// does: the writer's stint, one of its holds, and a poll (Stints). A
// writer queued behind readers waits for the longest hold of the readers
// already there, plus about a quarter refresh period to see the last
// release (a period once it has waited two), a refresh period's jitter and
// two round trips; a reader that dies holding costs it the row's lease
// (the longest of the readers') instead of its hold.
//
// A reader that dies holding does not stay on the row: every reader times
// the other entries of its row on its own clock, from the first answer
// that showed each entry's RVN, and its next write (a heartbeat, a join, a
// release) drops those unchanged for their lease, each conditioned on its
// RVN, by the rule of any takeover. So with one live reader heartbeating,
// a dead reader's entry leaves the row within its lease plus a heartbeat
// period. AcquireShared waits out a silent writer for its lease, as any
// waiter does; a queued waiter that died is passed over as for any lock.
// TryAcquireShared never queues and never takes a row over: each shared
// hold watches the row afresh.
//
// Readers have fencing tokens too (with fencing tokens on). A hold of
// readers that begins on a free row, or takes the row over from a silent
// holder, counts an acquisition: its token is above every earlier
// writer's. A reader that joins readers already holding shares their
// token. Every writer's acquisition counts a new one, above every
// reader's. So the tokens of a key rise with every change between a writer
// and readers, and a resource that refuses tokens below the largest it
// has seen refuses a writer's late write once a reader after it has
// presented its token (send it with reads, or record it where the
// resource's writes are checked), and refuses a reader that read before
// a writer that has since written. Guard is for writers: a reader holds
// no exclusivity to guard a write with.
//
// A key has at most one upgradeable reader (AcquireShared with
// WithUpgradeable; the row names its ticket). Lock.Upgrade makes it the
// writer without releasing: it joins the queue, which holds new readers
// back, and takes the key by a write conditioned on the row it read
// holding no entry but its own: every other reader has released (after
// its last act as a reader) or was taken over after its lease, and no
// writer holds a row of readers. It times the other readers' entries
// apart from its own heartbeats, which go on while it waits, so a silent
// co-reader is taken over after the row's lease. Writers queued before
// the upgrade wait for it, as for any reader, this client's own included,
// so two upgrades can never wait for each other and an upgrade never
// waits for a writer. The upgrade ends when its reader ends (ErrNotHeld,
// or the reader's loss).
//
// # What is not guaranteed
//
// A set queues on its first key only (see AcquireSet): waiters for sets
// with the same first key are served about in order (a set at the head
// that waits for another key may lose its place to the waiter behind it,
// and join again at the end), but a set is not ordered
// against waiters of its other keys, and a set whose first key is free
// while another is held polls without a place. A set handed its first key
// while another of its keys is held keeps the hand-over while it waits
// (the others see the first key held by it, and take it over after its
// lease, as from any silent holder). Permits wait unfairly: they poll,
// do not queue, and may be overtaken. A set waits for its held keys
// as one: the longest of their leases counts from the last change of any
// of them, not each from its own, so a set over keys whose holders keep
// changing may wait longer than any one of them would. Within one client,
// a set needs all its keys' claims free at the same moment, and may wait
// in process behind this client's own locks on single keys for as long as
// they are taken one after another. A set carries no data or attributes,
// and a lost set's other rows are left to run out, not released. On an
// MRSC global table, sets and semaphores are refused before any request
// (they need transactions).
//
// Fair waiting gives about the order of waiting, not a strict one: AWS Java
// clients jump the queue (they take a released row, a row kept for a
// stint included); a client with Config.Unfair takes a free row at once,
// but waits out a kept one like a silent holder's, and gives up after
// that holder's lease plus WithAdditionalWait; a set, which queues on its
// first key only, takes that key when kept for a stint (a set is not
// ordered against the waiters of a single key); a fleet whose clients
// have different stints, or an older version of this library (which
// takes a kept row as free), weakens the bound of Stints; a waiter that
// finds the queue full (record.MaxQueueLength) waits without a place, and
// one whose entry kept vanishing (an AWS Java client's whole-row writes, a
// takeover while its process was paused) waits without a place for up to
// a lease before it joins again; a release with WithDeleteOnRelease
// drops the queue; each dead waiter costs the others about its lease when
// its turn comes (two or more in a row, about one lease); and a waiter
// gives up, whatever its place, once the lock has stayed with one holder
// for that holder's lease plus WithAdditionalWait. A handed row, until confirmed, shows the
// waiter it was handed to as holder (Get, List), with no fencing token.
//
// A lease bounds how long the holder believes it holds the lock, not what
// its process does meanwhile: a holder that checked IsHeld, or started work
// under the lock's context, and then paused (a garbage-collection pause,
// SIGSTOP, a stalled virtual machine) can act after its lock was lost and
// taken by someone else. Only the resource can refuse such late actions.
// Lost-lock notification (Done, Err, the lock's context, the session
// monitor) is prompt but cannot force work to stop.
//
// Release and Heartbeat are conditioned on this identity and the lock's RVN,
// so they never change anybody else's lock. Two Clients must not share an
// identity.
package lock
