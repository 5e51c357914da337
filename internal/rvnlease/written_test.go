package rvnlease

import (
	"context"
	"errors"
	"testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// Loss and Outcome are the one classification of a holder's write that
// election's renewals and releases and lock's heartbeats and releases use.
func TestWrittenLossAndOutcome(t *testing.T) {
	cause := rows.Conflict("update", nil, nil)
	row := func(holder string, released bool) rows.Item {
		return rows.Item{Record: resourcelock.Record{HolderIdentity: holder, RVN: "r2", Released: released}}
	}
	for name, tc := range map[string]struct {
		w          Written
		outcome    metrics.Outcome
		reason     dynalease.LostReason
		holder     string
		wantCauses bool
	}{
		"landed":                     {w: Written{Landed: true, Item: row("me", false)}, outcome: metrics.OK},
		"not confirmed":              {w: Written{Err: errors.New("timeout")}, outcome: metrics.Error},
		"stolen":                     {w: Written{Lost: true, Item: row("other", false), Cause: cause}, outcome: metrics.Lost, reason: dynalease.Stolen, holder: "other", wantCauses: true},
		"released elsewhere":         {w: Written{Lost: true, Item: row("other", true), Cause: cause}, outcome: metrics.Lost, reason: dynalease.ReleasedElsewhere, holder: "other", wantCauses: true},
		"deleted":                    {w: Written{Lost: true, Missing: true, Cause: cause}, outcome: metrics.Lost, reason: dynalease.Deleted, wantCauses: true},
		"stolen after a lost answer": {w: Written{Lost: true, Item: row("other", false), Cause: context.DeadlineExceeded}, outcome: metrics.Lost, reason: dynalease.Stolen, holder: "other"},
	} {
		if got := tc.w.Outcome(); got != tc.outcome {
			t.Errorf("%s: Outcome() = %v, want %v", name, got, tc.outcome)
		}
		if !tc.w.Lost {
			continue
		}
		lost := tc.w.Loss("lease-a")
		if lost.Lease != "lease-a" || lost.Reason != tc.reason || lost.HolderIdentity != tc.holder {
			t.Errorf("%s: Loss() = %+v, want reason %v holder %q on lease-a", name, lost, tc.reason, tc.holder)
		}
		if tc.wantCauses && !errors.Is(lost, resourcelock.ErrConflict) {
			t.Errorf("%s: Loss() = %v, does not carry the write's own error", name, lost)
		}
		if !tc.wantCauses && (lost.Cause != nil || errors.Is(lost, context.DeadlineExceeded)) {
			t.Errorf("%s: Loss() = %v, carries the lost answer's error as its cause", name, lost)
		}
		if !errors.Is(lost, dynalease.ErrLost) {
			t.Errorf("%s: Loss() = %v, does not match dynalease.ErrLost", name, lost)
		}
	}
}

// Expired is the one Expired loss: the last renewal's failure as its
// cause, none when no renewal failed.
func TestExpired(t *testing.T) {
	failure := errors.New("throttled")
	if lost := Expired("lease-a", failure); lost.Lease != "lease-a" || lost.Reason != dynalease.Expired || !errors.Is(lost, failure) || !errors.Is(lost, dynalease.ErrLost) {
		t.Errorf("Expired(lease-a, throttled) = %+v", lost)
	}
	if lost := Expired("lease-a", nil); lost.Cause != nil {
		t.Errorf("Expired(lease-a, nil) has cause %v", lost.Cause)
	}
}
