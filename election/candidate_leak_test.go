package election

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// A leader that crashed without withdrawing leaves its entry behind; the
// same identity in a new process, which waits the crashed term out and
// leads, drops that entry while it campaigns (an entry of its identity
// with another ticket), so that stable identities that crash and win
// again leave no entry behind.
func TestARestartedCandidateDropsTheEntryItsCrashedProcessLeft(t *testing.T) {
	h := newHarness(t, withCandidacy(1, false, 0))
	crashed := rows.Candidate{Ticket: uuid.NewString(), Identity: "a", Priority: 1, RVN: uuid.NewString()}
	rows.MustRaw(h.store).PutItem(rows.Item{Key: rowKey, Record: resourcelock.Record{HolderIdentity: "a", RVN: "crashed-term", LeaseDuration: lease},
		Candidates: []rows.Candidate{crashed}})
	h.start()
	h.waitIdle()
	for !h.e.IsLeader() {
		if h.now().Sub(epoch) > lease+2*maxPoll {
			t.Fatal("the restarted candidate never led")
		}
		h.stepIdle(maxPoll)
	}
	it, _ := rows.MustRaw(h.store).Item(rowKey)
	for _, c := range it.Candidates {
		if c.Ticket == crashed.Ticket {
			t.Fatalf("the crashed process's entry is still on the row after its identity led again: %+v", it.Candidates)
		}
	}
}

// A standing candidate drops, once stale, every entry of the leader's
// identity but the leader's current one (the one that changed last): the
// entry an earlier process of that identity left when it crashed does not
// stay on the row forever.
func TestAStandbyDropsAnEarlierProcesssEntryOfTheLeadersIdentity(t *testing.T) {
	h := newHarness(t, withCandidacy(0, true, 0))
	crashed := rows.Candidate{Ticket: uuid.NewString(), Identity: "L", Priority: 1, RVN: uuid.NewString()}
	current := rows.Candidate{Ticket: uuid.NewString(), Identity: "L", Priority: 1, RVN: uuid.NewString()}
	rows.MustRaw(h.store).PutItem(rows.Item{Key: rowKey, Record: resourcelock.Record{HolderIdentity: "L", RVN: "t0", LeaseDuration: lease},
		Candidates: []rows.Candidate{crashed, current}})
	renewLeader := func() {
		t.Helper()
		it, _ := rows.MustRaw(h.store).Item(rowKey)
		rec := it.Record
		rec.RVN = uuid.NewString()
		if _, err := rows.MustOpen(h.store).Update(context.Background(), rowKey, resourcelock.Precondition{RVN: it.RVN, HolderIdentity: "L"}, rec, rows.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.start()
	h.waitIdle()
	// The current process of L stands once more, then leads on: its entry
	// changed last.
	current.RVN = uuid.NewString()
	if _, err := rows.MustOpen(h.store).Stand(context.Background(), rowKey, current, nil); err != nil {
		t.Fatal(err)
	}
	has := func(c rows.Candidate) bool {
		it, _ := rows.MustRaw(h.store).Item(rowKey)
		for _, e := range it.Candidates {
			if e.Ticket == c.Ticket {
				return true
			}
		}
		return false
	}
	for has(crashed) {
		if h.now().Sub(epoch) > 3*lease {
			t.Fatal("the crashed process's entry of the leader's identity was never dropped")
		}
		renewLeader()
		h.stepIdle(maxPoll)
	}
	if !has(current) {
		t.Fatal("the leader's current entry was dropped")
	}
	if h.e.IsLeader() {
		t.Fatal("the standby leads beside a live leader")
	}
}

// A candidate that finds the row free takes it at its first poll, before
// its campaign stood twice; as leader, its first renewal drops the entry
// an earlier process of its identity left.
func TestALeaderDropsTheEntryAnEarlierProcessOfItsIdentityLeft(t *testing.T) {
	h := newHarness(t, withCandidacy(1, false, 0))
	crashed := rows.Candidate{Ticket: uuid.NewString(), Identity: "a", Priority: 1, RVN: uuid.NewString()}
	rows.MustRaw(h.store).PutItem(rows.Item{Key: rowKey, Record: resourcelock.Record{HolderIdentity: "a", RVN: "r0", LeaseDuration: lease, Released: true},
		Candidates: []rows.Candidate{crashed}})
	h.start()
	h.waitIdle()
	if !h.e.IsLeader() {
		t.Fatal("the candidate did not take the free row at once")
	}
	for range 3 {
		h.stepIdle(retry)
	}
	it, _ := rows.MustRaw(h.store).Item(rowKey)
	for _, c := range it.Candidates {
		if c.Ticket == crashed.Ticket {
			t.Fatalf("the earlier process's entry is still on the row after three renewals: %+v", it.Candidates)
		}
	}
}
