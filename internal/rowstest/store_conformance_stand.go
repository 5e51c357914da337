package rowstest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// candidate returns a candidate entry for identity with a fresh ticket and
// RVN.
func candidate(identity string, priority int64) rows.Candidate {
	return rows.Candidate{Ticket: uuid.NewString(), Identity: identity, Priority: priority, RVN: uuid.NewString()}
}

// mustStand sends a Stand of c dropping drop at k, which must land and
// leave the row's record as it was, checks that the row it returns is
// what a Get returns, and returns it.
func mustStand(t *testing.T, s rows.Store, k resourcelock.Key, c rows.Candidate, drop ...string) rows.Item {
	t.Helper()
	before := mustGetItem(t, s, k)
	it, err := s.Stand(ctx(t), k, c, drop)
	if err != nil {
		t.Fatalf("Stand of %q at %s: %v", c.Identity, k, err)
	}
	if it.RVN != before.RVN || it.HolderIdentity != before.HolderIdentity || it.Released != before.Released ||
		it.Acquisitions != before.Acquisitions || !slices.Equal(it.Queue, before.Queue) {
		t.Fatalf("Stand changed the row's record or queue: %s, was %s", formatStoreItem(it), formatStoreItem(before))
	}
	wantStoredItem(t, fmt.Sprintf("after Stand of %q", c.Identity), s, k, it)
	return it
}

// wantCandidates fails unless it has exactly want, in ticket order.
func wantCandidates(t *testing.T, what string, it rows.Item, want ...rows.Candidate) {
	t.Helper()
	want = slices.Clone(want)
	slices.SortFunc(want, func(a, b rows.Candidate) int { return strings.Compare(a.Ticket, b.Ticket) })
	if len(want) == 0 {
		want = nil
	}
	if !slices.Equal(it.Candidates, want) {
		t.Fatalf("%s: candidates %+v, want %+v", what, it.Candidates, want)
	}
}

func testStoreStand(t *testing.T, s rows.Store) {
	k := storeKey("stand")
	held := mustCreate(t, s, k, heldBy("leader", time.Second, "data"), rows.WriteOptions{})
	a, b := candidate("a", 2), candidate("b", -1)
	wantCandidates(t, "a row no candidate stood on", held)
	got := mustStand(t, s, k, a)
	wantCandidates(t, "after a stood", got, a)
	got = mustStand(t, s, k, b)
	wantCandidates(t, "after b stood", got, a, b)
	a2 := a
	a2.RVN, a2.Priority = uuid.NewString(), 7
	got = mustStand(t, s, k, a2)
	wantCandidates(t, "after a stood again (its entry replaced)", got, a2, b)
	got = mustStand(t, s, k, rows.Candidate{}, b.Ticket, "never-stood")
	wantCandidates(t, "after b's entry was dropped", got, a2)
	c := candidate("c", 0)
	got = mustStand(t, s, k, c, a2.Ticket)
	wantCandidates(t, "after c stood dropping a", got, c)
	got = mustStand(t, s, k, rows.Candidate{}, c.Ticket)
	wantCandidates(t, "after the last entry was dropped", got)
	got = mustStand(t, s, k, rows.Candidate{}, c.Ticket)
	wantCandidates(t, "dropping from a row without candidates", got)
}

func testStoreStandKept(t *testing.T, s rows.Store) {
	k := storeKey("stand-kept")
	held := mustCreate(t, s, k, heldBy("leader", time.Second, ""), rows.WriteOptions{})
	a := candidate("a", 1)
	mustStand(t, s, k, a)
	renewed := mustUpdate(t, s, k, asHolder(held), heldBy("leader", time.Second, ""), rows.WriteOptions{})
	wantCandidates(t, "after the holder's renewal", renewed, a)
	released := mustUpdate(t, s, k, asHolder(renewed), releasedBy("leader"), rows.WriteOptions{})
	wantCandidates(t, "after the holder's release", released, a)
	taken := mustCreate(t, s, k, heldBy("next", time.Second, ""), rows.WriteOptions{})
	wantCandidates(t, "after a Create of the released row", taken, a)
	over := mustUpdate(t, s, k, asTakeover(taken), heldBy("third", time.Second, ""), rows.WriteOptions{})
	wantCandidates(t, "after a takeover", over, a)
}

func testStoreStandInvalid(t *testing.T, s rows.Store) {
	k := storeKey("stand-invalid")
	if _, err := s.Stand(ctx(t), k, candidate("a", 0), nil); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Stand on a missing row: %v, want ErrNotFound", err)
	}
	wantNoItem(t, "after a Stand on a missing row", s, k)
	for name, c := range map[string]rows.Candidate{
		"no identity": {Ticket: "t", RVN: "r"},
		"no RVN":      {Ticket: "t", Identity: "a"},
		"nothing":     {},
	} {
		if _, err := s.Stand(ctx(t), k, c, nil); !errors.Is(err, dynalease.ErrInvalid) {
			t.Fatalf("Stand of a candidate with %s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := s.Stand(ctx(t), k, rows.Candidate{}, []string{""}); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Stand dropping an empty ticket: %v, want ErrInvalid", err)
	}
	mustCreate(t, s, k, heldBy("leader", time.Second, ""), rows.WriteOptions{})
	var all []rows.Candidate
	for i := range rows.MaxCandidates {
		c := candidate(fmt.Sprintf("c%d", i), int64(i))
		all = append(all, c)
		if _, err := s.Stand(ctx(t), k, c, nil); err != nil {
			t.Fatalf("Stand %d: %v", i, err)
		}
	}
	_, err := s.Stand(ctx(t), k, candidate("one-too-many", 0), nil)
	wantConflict(t, "Stand of a new entry on a full row", err)
	if cur, ok := rows.CurrentItem(err); !ok || len(cur.Candidates) != rows.MaxCandidates {
		t.Fatalf("the conflict of a full row carries %d candidates (found %v), want %d", len(cur.Candidates), ok, rows.MaxCandidates)
	}
	again := all[3]
	again.RVN = uuid.NewString()
	mustStand(t, s, k, again)
	// The bound is on the entries the row has before the write.
	_, err = s.Stand(ctx(t), k, candidate("with-a-drop", 0), []string{all[0].Ticket})
	wantConflict(t, "Stand of a new entry dropping another on a full row", err)
	mustStand(t, s, k, rows.Candidate{}, all[0].Ticket)
	got := mustStand(t, s, k, candidate("after-a-drop", 0))
	if len(got.Candidates) != rows.MaxCandidates {
		t.Fatalf("%d candidates after a drop and a stand, want %d", len(got.Candidates), rows.MaxCandidates)
	}
}

func testStoreStandConcurrent(t *testing.T, s rows.Store) {
	k := storeKey("stand-concurrent")
	mustCreate(t, s, k, heldBy("leader", time.Second, ""), rows.WriteOptions{})
	const n = 8
	cands := make([]rows.Candidate, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range cands {
		cands[i] = candidate(fmt.Sprintf("c%d", i), int64(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Stand(ctx(t), k, cands[i], nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Stand %d: %v", i, err)
		}
	}
	wantCandidates(t, "after concurrent stands on a row without candidates", mustGetItem(t, s, k), cands...)
}
