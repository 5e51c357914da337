package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
)

// TestOrders places orders of several items from several buyers, each
// naming its items in a random order, against DynamoDB: every order is
// decided (none deadlocks), and every item's stock falls by exactly the
// units sold of it.
func TestOrders(t *testing.T) {
	db := ddbtest.Client(t)
	tb := newTables(t, db)
	s := orderSettings{
		Items: []string{"a", "b", "c", "d"}, Stock: 12, Buyers: 4, Orders: 5, PerOrder: 3, MaxUnits: 2,
		Think: 2 * time.Millisecond, Lease: 5 * time.Second, Heartbeat: time.Second, Refresh: 20 * time.Millisecond, RunID: runID(),
	}
	r, err := runOrders(t.Context(), db, tb, s)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printOrders(&out, r)
	t.Logf("orders:\n%s", out.String())
	if got, want := r.Placed+r.Refused, s.Buyers*s.Orders; got != want {
		t.Fatalf("%d orders decided, want %d", got, want)
	}
	if !r.Exact() {
		t.Fatalf("the stock is not exact: %+v", r)
	}
	if r.Placed == 0 || r.MostKeys < 2 {
		t.Fatalf("%d orders placed, at most %d items in one: the run proves nothing", r.Placed, r.MostKeys)
	}
}
