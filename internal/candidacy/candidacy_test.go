package candidacy

import (
	"slices"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func row(cands ...rows.Candidate) rows.Item {
	return rows.Item{Candidates: cands}
}

func cand(ticket, identity string, prio int64, rvn string) rows.Candidate {
	return rows.Candidate{Ticket: ticket, Identity: identity, Priority: prio, RVN: rvn}
}

func TestAnEntrySeenOnceIsNotLive(t *testing.T) {
	var w Watch
	w.See(row(cand("a", "A", 5, "1")), at(0))
	if live := w.Live(at(0.1), time.Hour); len(live) != 0 {
		t.Fatalf("live after one answer: %v; the first answer proves nothing", live)
	}
	w.See(row(cand("a", "A", 5, "1")), at(2))
	if live := w.Live(at(2.1), time.Hour); len(live) != 0 {
		t.Fatalf("live while unchanged: %v", live)
	}
}

func TestAnEntryIsLiveForTheWindowFromThePreviousAnswer(t *testing.T) {
	var w Watch
	w.See(row(), at(0))
	w.See(row(cand("a", "A", 5, "1")), at(2)) // appeared after the answer sent at 0
	if _, ok := w.Best(at(6), 6*time.Second, 0, ""); !ok {
		t.Fatal("an entry that appeared between two answers is not live within the window from the first")
	}
	if _, ok := w.Best(at(6.001), 6*time.Second, 0, ""); ok {
		t.Fatal("an entry is live past the window counted from the answer before its change")
	}
	w.See(row(cand("a", "A", 5, "2")), at(7)) // changed after the answer sent at 2
	if _, ok := w.Best(at(8), 6*time.Second, 0, ""); !ok {
		t.Fatal("a changed entry is not live")
	}
	if _, ok := w.Best(at(8.001), 6*time.Second, 0, ""); ok {
		t.Fatal("a change seen at 7 counts from the answer sent at 2, not later")
	}
}

func TestBestPicksTheHighestLiveAboveThenTheOldest(t *testing.T) {
	var w Watch
	w.See(row(cand("x", "X", 9, "1")), at(0))
	w.See(row(cand("x", "X", 9, "1"), cand("b", "B", 5, "1")), at(1))
	w.See(row(cand("x", "X", 9, "1"), cand("b", "B", 5, "2"), cand("a", "A", 5, "1"), cand("c", "C", 3, "1")), at(2))
	got, ok := w.Best(at(2), 3*time.Second, 3, "")
	if !ok || got.Ticket != "b" {
		t.Fatalf("Best above 3 = %+v %v, want b (X is not live, A came later than B, C is not above 3)", got, ok)
	}
	if _, ok := w.Best(at(2), 3*time.Second, 5, ""); ok {
		t.Fatal("an equal priority is not above")
	}
	if got, _ := w.Best(at(2), 3*time.Second, 0, "b"); got.Ticket != "a" {
		t.Fatalf("Best skipping b = %+v, want a", got)
	}
	if got, ok := w.Named(at(2), 3*time.Second, "C"); !ok || got.Ticket != "c" {
		t.Fatalf("Named C = %+v %v", got, ok)
	}
	if _, ok := w.Named(at(2), 3*time.Second, "X"); ok || !w.Known("X") {
		t.Fatal("X is known and not live")
	}
}

func TestEntriesGoneFromTheRowAreForgotten(t *testing.T) {
	var w Watch
	w.See(row(cand("a", "A", 1, "1")), at(0))
	w.See(row(), at(1))
	if w.Known("A") {
		t.Fatal("an entry the last answer lacks is known")
	}
	w.See(row(cand("a", "A", 1, "1")), at(2))
	if _, ok := w.Named(at(2), time.Hour, "A"); !ok {
		t.Fatal("an entry back after an answer without it counts as changed")
	}
}

func TestAnOlderAnswerIsIgnored(t *testing.T) {
	var w Watch
	w.See(row(), at(5))
	w.See(row(cand("a", "A", 1, "1")), at(4))
	if w.Known("A") {
		t.Fatal("an answer to an older request was taken")
	}
}

func TestStale(t *testing.T) {
	var w Watch
	w.See(row(cand("a", "A", 1, "1"), cand("me", "M", 1, "1")), at(0))
	w.See(row(cand("a", "A", 1, "1"), cand("me", "M", 1, "2"), cand("b", "B", 1, "1")), at(10))
	w.See(row(cand("a", "A", 1, "1"), cand("me", "M", 1, "3"), cand("b", "B", 1, "1")), at(21))
	if got := w.Stale(at(21.5), 20*time.Second, 5*time.Second, "me", "M"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Stale = %v, want [a]", got)
	}
	// After an outage of its own, the watch does not know the row now.
	if got := w.Stale(at(60), 20*time.Second, 5*time.Second, "me", "M"); got != nil {
		t.Fatalf("Stale after an outage = %v, want none", got)
	}
}

func TestStaleKeepsTheHoldersEntry(t *testing.T) {
	var w Watch
	held := func(cands ...rows.Candidate) rows.Item {
		return rows.Item{Record: resourcelock.Record{HolderIdentity: "L"}, Candidates: cands}
	}
	w.See(held(cand("l", "L", 3, "1"), cand("a", "A", 1, "1")), at(0))
	w.See(held(cand("l", "L", 3, "1"), cand("a", "A", 1, "1")), at(30))
	if got := w.Stale(at(30), 20*time.Second, 5*time.Second, "", ""); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Stale = %v, want [a]: the holder's entry is kept", got)
	}
}

// Of the holder's entries only its current one (changed last) is kept:
// an earlier process of its identity that crashed before withdrawing
// leaves an entry that is dropped once stale, as any.
func TestStaleKeepsOnlyTheHoldersCurrentEntry(t *testing.T) {
	var w Watch
	held := func(cands ...rows.Candidate) rows.Item {
		return rows.Item{Record: resourcelock.Record{HolderIdentity: "L"}, Candidates: cands}
	}
	w.See(held(cand("crashed", "L", 3, "1"), cand("l", "L", 3, "1")), at(0))
	w.See(held(cand("crashed", "L", 3, "1"), cand("l", "L", 3, "2")), at(2)) // l stood once more before it led
	w.See(held(cand("crashed", "L", 3, "1"), cand("l", "L", 3, "2")), at(40))
	if got := w.Stale(at(40), 20*time.Second, 5*time.Second, "", ""); !slices.Equal(got, []string{"crashed"}) {
		t.Fatalf("Stale = %v, want [crashed]: only the holder's current entry is kept", got)
	}
}

// A candidate drops the entries of its own identity with another ticket
// at once: an earlier process of its identity, which it replaces.
func TestStaleDropsTheCandidatesOwnEarlierEntries(t *testing.T) {
	var w Watch
	w.See(row(cand("earlier", "M", 1, "1"), cand("me", "M", 1, "1"), cand("a", "A", 1, "1")), at(0))
	if got := w.Stale(at(0.5), 20*time.Second, 5*time.Second, "me", "M"); !slices.Equal(got, []string{"earlier"}) {
		t.Fatalf("Stale = %v, want [earlier]", got)
	}
}

// Entries of the holder's identity that the watch cannot tell apart (the
// same sighting, never changed) are all kept: dropping one would be a
// coin toss between a crashed process's entry and the leader's.
func TestStaleKeepsTheHoldersEntriesItCannotTellApart(t *testing.T) {
	var w Watch
	held := func(cands ...rows.Candidate) rows.Item {
		return rows.Item{Record: resourcelock.Record{HolderIdentity: "L"}, Candidates: cands}
	}
	w.See(held(cand("aaaa-leader", "L", 3, "9"), cand("zzzz-crashed", "L", 3, "1")), at(0))
	w.See(held(cand("aaaa-leader", "L", 3, "9"), cand("zzzz-crashed", "L", 3, "1")), at(40))
	if got := w.Stale(at(40), 20*time.Second, 5*time.Second, "me", "A"); len(got) != 0 {
		t.Fatalf("Stale = %v, want none: the watch cannot tell the leader's entry", got)
	}
}
