package rvnlease

import "time"

// maxAttempts bounds the writes in doubt that a holder remembers. Only a
// write whose answer never came (a timeout, a dropped connection, a 5xx)
// stays in doubt, and one sent before this many later writes of the same
// holder is long settled at the server.
const maxAttempts = 16

// Attempts remembers the writes of one holder that may still be found in
// the row, by RVN, with the local time just before each was sent. A write
// whose answer was lost may still land later; finding one of these RVNs in
// the row proves that write landed, no earlier than its send time. The
// zero value is ready to use. It is a short list, not a map: a holder
// rarely has more than one or two writes in doubt, and thousands of held
// locks each keep one.
//
// A write leaves the list when it can no longer matter: when a write of the
// holder is confirmed (every other one was conditioned on the state the
// confirmed one replaced), when its own answer settled it (Settle), when
// the row is seen with an RVN other than the one it was conditioned on
// (RVNs are never reused, so the condition can never hold again; Forget),
// or when more than maxAttempts later writes were sent. The first two
// rules can drop a write that an SDK retry or a delayed request still
// lands later (a create, once the row is free again); such a row is then
// waited out as a stranger's. Forgetting costs time, never safety: nothing
// but a remembered RVN makes a row ours.
type Attempts struct {
	list []attempt
}

type attempt struct {
	rvn      string
	sent     time.Time
	cond     string // the RVN the write was conditioned on; "" for a create
	released bool   // the write marks the row released
	// inherited: sent by an earlier acquirer of the same identity (see
	// Acquirer.Resume), with that call's record, not this one's.
	inherited bool
}

// Add remembers a write of rvn, conditioned on the RVN cond ("" for a
// create), about to be sent at sent; released tells whether it marks the
// row released.
func (a *Attempts) Add(rvn, cond string, released bool, sent time.Time) {
	if len(a.list) == maxAttempts {
		copy(a.list, a.list[1:])
		a.list = a.list[:maxAttempts-1]
	}
	a.list = append(a.list, attempt{rvn: rvn, sent: sent, cond: cond, released: released})
}

// Landed reports whether a row carrying rvn, marked released or not, is a
// write of ours, and returns that write's send time. A released row is
// ours only through a write that released it: a forced release, and the
// AWS Java client's, keep the RVN they found.
func (a *Attempts) Landed(rvn string, released bool) (time.Time, bool) {
	for _, at := range a.list {
		if at.rvn == rvn && at.released == released {
			return at.sent, true
		}
	}
	return time.Time{}, false
}

// Inherited reports whether the write of rvn was sent by an earlier
// acquirer whose attempts these continue.
func (a *Attempts) Inherited(rvn string) bool {
	for _, at := range a.list {
		if at.rvn == rvn {
			return at.inherited
		}
	}
	return false
}

// addInherited remembers the write of rvn, sent at sent by an earlier
// acquirer, as landed in the row and in doubt again.
func (a *Attempts) addInherited(rvn string, sent time.Time) {
	a.Add(rvn, "", false, sent)
	a.list[len(a.list)-1].inherited = true
}

// inherit marks every write remembered so far as an earlier acquirer's.
func (a *Attempts) inherit() {
	for i := range a.list {
		a.list[i].inherited = true
	}
}

// Settle forgets the write of rvn: its answer showed that it did not land
// (or that it landed and was replaced since).
func (a *Attempts) Settle(rvn string) {
	a.filter(func(at attempt) bool { return at.rvn != rvn })
}

// Forget forgets the writes that can no longer land now that the row was
// seen carrying rvn: those conditioned on another RVN.
func (a *Attempts) Forget(rvn string) {
	a.filter(func(at attempt) bool { return at.cond == "" || at.cond == rvn })
}

// Clear forgets every attempt: call it when one is confirmed, since every
// other attempt was conditioned on the state the confirmed one replaced and
// can no longer land. It drops the list's memory too: a held lock spends
// nearly all its time with nothing in doubt, and thousands of them each
// keeping room for one attempt would cost more than allocating it anew
// for each write.
func (a *Attempts) Clear() {
	a.list = nil
}

// Len returns how many attempts are remembered.
func (a *Attempts) Len() int { return len(a.list) }

func (a *Attempts) filter(keep func(attempt) bool) {
	n := 0
	for _, at := range a.list {
		if keep(at) {
			a.list[n] = at
			n++
		}
	}
	clear(a.list[n:])
	a.list = a.list[:n]
}

func (a *Attempts) clone() Attempts {
	return Attempts{list: append([]attempt(nil), a.list...)}
}
