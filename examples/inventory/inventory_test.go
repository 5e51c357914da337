package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/ddbtest"
)

// TestRuns makes both runs on a small stock against DynamoDB. The locked
// run must keep the stock exact; the unlocked run's anomaly is a race, so
// it is only logged.
func TestRuns(t *testing.T) {
	db := ddbtest.Client(t)
	locks := ddbtest.NewTable(t, db, ddbtest.TableSpec{})
	stock := ddbtest.NewTable(t, db, ddbtest.TableSpec{PartitionKey: attrID})
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
	sh := &shop{db: db, table: stock, item: s.Item, think: s.Think}

	unlocked, err := runUnlocked(t.Context(), sh, s)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printResult(&out, unlocked)
	t.Logf("unlocked:\n%s", out.String())

	locked, err := runLocked(t.Context(), sh, locks, s)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	printResult(&out, locked)
	t.Logf("locked:\n%s", out.String())

	want := s.Buyers * s.Purchases
	if locked.Tried != want || locked.Acquisitions != want {
		t.Errorf("locked run: %d purchases tried, %d acquisitions; want %d of each", locked.Tried, locked.Acquisitions, want)
	}
	if !locked.Exact() {
		t.Errorf("locked run: final stock %d, sold %d of %d: not exact", locked.Final, locked.Sold, locked.Initial)
	}
	// Demand (at least 16 units) exceeds the stock, so the locked run
	// sells out except for at most one unit too few for a 2-unit purchase.
	if locked.Final > 1 {
		t.Errorf("locked run: %d units left unsold although demand exceeded the stock", locked.Final)
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
