package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
)

// newTables makes the lock, fence and stock tables of a test.
func newTables(t *testing.T, db *dynamodb.Client) tables {
	return tables{
		Locks: ddbtest.NewTable(t, db, ddbtest.TableSpec{}),
		Fence: ddbtest.NewTable(t, db, ddbtest.TableSpec{}),
		Stock: ddbtest.NewTable(t, db, ddbtest.TableSpec{PartitionKey: attrID}),
	}
}

// TestRuns makes the three runs on a small stock against DynamoDB. The
// locked runs, with plain and with guarded writes, must keep the stock
// exact; the unlocked run's anomaly is a race, so it is only logged.
func TestRuns(t *testing.T) {
	db := ddbtest.Client(t)
	tb := newTables(t, db)
	s := settings{
		Item:      "widget",
		Stock:     10,
		Buyers:    4,
		Purchases: 4,
		MaxUnits:  2,
		Think:     2 * time.Millisecond,
		Lease:     5 * time.Second,
		Heartbeat: time.Second,
		Refresh:   20 * time.Millisecond,
		RunID:     runID(),
	}
	sh, err := newShop(db, tb, s.Item, s.Think)
	if err != nil {
		t.Fatal(err)
	}

	unlocked, err := runUnlocked(t.Context(), sh, s)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printResult(&out, unlocked)
	t.Logf("unlocked:\n%s", out.String())

	want := s.Buyers * s.Purchases
	for _, mode := range []writeMode{plainWrite, guardedWrite} {
		r, err := runLocked(t.Context(), sh.with(mode), tb, s, "test-"+strings.Fields(mode.String())[0])
		if err != nil {
			t.Fatalf("locked run, %v: %v", mode, err)
		}
		out.Reset()
		printResult(&out, r)
		t.Logf("locked, %v:\n%s", mode, out.String())

		if r.Tried != want || r.Acquisitions != want {
			t.Errorf("locked run, %v: %d purchases tried, %d acquisitions; want %d of each", mode, r.Tried, r.Acquisitions, want)
		}
		if !r.Exact() {
			t.Errorf("locked run, %v: final stock %d, sold %d of %d: not exact", mode, r.Final, r.Sold, r.Initial)
		}
		// Demand (at least 16 units) exceeds the stock, so the locked run
		// sells out except for at most one unit too few for a 2-unit
		// purchase.
		if r.Final > 1 {
			t.Errorf("locked run, %v: %d units left unsold although demand exceeded the stock", mode, r.Final)
		}
	}
}

// TestPausedWorker makes the paused-worker scenarios, in parallel on items
// of their own. A sleeper stalls past its 1 s lease between its read and
// its write while two others sell; its clock is frozen, so on waking its
// lock still looks held to it. The guarded and the fenced write must be
// refused by DynamoDB, with nothing applied and the stock exact. That the
// plain write lands and corrupts the stock is the demonstration's point;
// it is logged.
func TestPausedWorker(t *testing.T) {
	db := ddbtest.Client(t)
	tb := newTables(t, db)
	for _, mode := range []writeMode{plainWrite, guardedWrite, fencedWrite} {
		t.Run(strings.ReplaceAll(mode.String(), " ", "-"), func(t *testing.T) {
			t.Parallel()
			s := settings{
				Item:           "gadget-" + strings.ReplaceAll(mode.String(), " ", "-"),
				Stock:          20,
				MaxUnits:       2,
				Think:          2 * time.Millisecond,
				Refresh:        20 * time.Millisecond,
				PauseLease:     time.Second,
				Others:         2,
				OtherPurchases: 2,
				RunID:          runID(),
			}
			sh, err := newShop(db, tb, s.Item, s.Think)
			if err != nil {
				t.Fatal(err)
			}
			p, err := runPaused(t.Context(), sh, tb, s, mode, "test")
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			printPaused(&out, p)
			t.Logf("paused worker, %v:\n%s", mode, out.String())

			// The scenario itself: a stall past the lease, others that
			// made all their sales meanwhile, a sleeper that cannot tell.
			if p.Stalled < s.PauseLease {
				t.Errorf("the sleeper stalled %v, less than its lease %v", p.Stalled, s.PauseLease)
			}
			if n := s.Others * s.OtherPurchases; p.Others.Sales != n {
				t.Errorf("the others made %d sales, want %d", p.Others.Sales, n)
			}
			if !p.HeldOnWaking {
				t.Errorf("on waking the sleeper's lock did not look held: its clock was not frozen")
			}

			switch mode {
			case plainWrite:
				if p.Landed() && !p.Exact() {
					t.Logf("as expected, the stale plain write landed: %d units sold never left the stock", p.Lost())
				} else {
					t.Logf("the stale plain write did not corrupt the stock (landed: %v)", p.Landed())
				}
				return
			case guardedWrite:
				if !errors.Is(p.WriteErr, dynalease.ErrLost) {
					t.Errorf("the stale guarded write: error %v, want one matching dynalease.ErrLost", p.WriteErr)
				}
			case fencedWrite:
				if !errors.Is(p.WriteErr, errFenced) {
					t.Errorf("the stale fenced write: error %v, want one matching errFenced", p.WriteErr)
				}
				if p.Fence <= p.Token {
					t.Errorf("the item's fence %d is not newer than the sleeper's token %d", p.Fence, p.Token)
				}
			}
			if !p.Exact() || p.Sold != p.Others.Sold {
				t.Errorf("%v: final stock %d, sold %d (the others %d) of %d: not exact", mode, p.Final, p.Sold, p.Others.Sold, p.Initial)
			}
		})
	}
}

// TestResult checks the arithmetic of the report.
func TestResult(t *testing.T) {
	r := result{Initial: 40, Final: 26, Sold: 93}
	if r.Exact() || r.Removed() != 14 || r.Lost() != 79 || r.Oversold() != 53 {
		t.Errorf("lost updates: Exact %v Removed %d Lost %d Oversold %d", r.Exact(), r.Removed(), r.Lost(), r.Oversold())
	}
	r = result{Initial: 40, Final: 0, Sold: 40}
	if !r.Exact() || r.Lost() != 0 || r.Oversold() != 0 {
		t.Errorf("exact run: Exact %v Lost %d Oversold %d", r.Exact(), r.Lost(), r.Oversold())
	}
	r = result{Initial: 5, Final: -1, Sold: 6}
	if r.Exact() {
		t.Errorf("a negative stock counts as exact")
	}
}
