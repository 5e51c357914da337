package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
)

// TestRun runs a small bank against DynamoDB and checks the invariant of
// the example: every customer's records match the changes applied to it.
func TestRun(t *testing.T) {
	db := ddbtest.Client(t)
	tb := tables{
		Locks:    ddbtest.NewTable(t, db, ddbtest.TableSpec{}),
		Accounts: ddbtest.NewTable(t, db, ddbtest.TableSpec{PartitionKey: attrID}),
		Profiles: ddbtest.NewTable(t, db, ddbtest.TableSpec{PartitionKey: attrID}),
	}
	s := settings{
		Customers:        2,
		Workers:          3,
		ChangesPerWorker: 8,
		MaxDeposit:       10000,
		Think:            time.Millisecond,
		Lease:            5 * time.Second,
		Heartbeat:        time.Second,
		Refresh:          20 * time.Millisecond,
		RunID:            runID(),
	}
	rep, err := run(t.Context(), db, tb, s)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printReport(&out, rep)
	t.Log("\n" + out.String())

	if !rep.OK() {
		t.Errorf("records do not match the changes applied")
	}
	changes := 0
	for _, c := range rep.Customers {
		changes += c.Changes
		if c.Acquisitions != int64(c.Changes) {
			t.Errorf("customer %s: lock row counts %d acquisitions, want one per change (%d)", c.ID, c.Acquisitions, c.Changes)
		}
	}
	if want := s.Workers * s.ChangesPerWorker; changes != want {
		t.Errorf("%d changes applied, want %d", changes, want)
	}
	for _, w := range rep.Workers {
		if w.Acquisitions != w.Changes {
			t.Errorf("%s: %d acquisitions for %d changes", w.Name, w.Acquisitions, w.Changes)
		}
	}
}

func TestMoney(t *testing.T) {
	for cents, want := range map[int64]string{0: "0.00", 5: "0.05", 123456: "1234.56", -101: "-1.01"} {
		if got := money(cents); got != want {
			t.Errorf("money(%d) = %q, want %q", cents, got, want)
		}
	}
}
