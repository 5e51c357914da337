package rvnlease

import (
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestObservationRestartsOnlyOnANewRVN(t *testing.T) {
	var o Observation
	held := rows.Item{Record: resourcelock.Record{HolderIdentity: "b", RVN: "r1", LeaseDuration: 10 * time.Second}}
	if !o.Observe(held, false, t0) {
		t.Fatal("first observation not reported as a change")
	}
	if o.Observe(held, false, t0.Add(5*time.Second)) {
		t.Fatal("the same RVN restarted the wait")
	}
	if o.Expired(t0.Add(10*time.Second-1)) || !o.Expired(t0.Add(10*time.Second)) {
		t.Fatal("expiry not at SeenAt + the holder's lease")
	}
	held.RVN = "r2"
	if !o.Observe(held, false, t0.Add(6*time.Second)) || !o.Expiry().Equal(t0.Add(16*time.Second)) {
		t.Fatalf("a new RVN did not restart the wait: %+v", o)
	}
}

func TestObservationFree(t *testing.T) {
	var o Observation
	if o.Free() || o.Expired(t0) {
		t.Fatal("an empty observation is neither free nor expired")
	}
	o.Observe(rows.Item{}, true, t0)
	if !o.Free() || o.Expired(t0.Add(time.Hour)) {
		t.Fatal("a missing record is free, never expired")
	}
	rel := rows.Item{Record: resourcelock.Record{HolderIdentity: "b", RVN: "r", LeaseDuration: time.Second, Released: true}}
	o.Observe(rel, false, t0)
	if !o.Free() || o.Holder != "b" {
		t.Fatalf("a released record is free: %+v", o)
	}
	// Released with a waiter queued, it belongs to the queue: held, to be
	// taken over after its lease by anybody but the queue's head.
	rel.RVN = "r2"
	rel.Queue = []rows.Waiter{{Ticket: "t", Identity: "c", Lease: time.Second}}
	o.Observe(rel, false, t0)
	if o.Free() || !o.Queued || o.Expired(t0.Add(time.Second-1)) || !o.Expired(t0.Add(time.Second)) {
		t.Fatalf("a released record with a waiter is held for its lease: %+v", o)
	}
}
