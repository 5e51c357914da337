package rvnlease

import (
	"errors"
	"testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/metrics"
	"github.com/dynalease/dynalease/resourcelock"
)

// Loss and Outcome are the one classification of a holder's write that
// election's renewals and releases and lock's heartbeats and releases use.
func TestWrittenLossAndOutcome(t *testing.T) {
	cause := resourcelock.Conflict("update", nil, nil)
	row := func(holder string, released bool) resourcelock.Item {
		return resourcelock.Item{Record: resourcelock.Record{HolderIdentity: holder, RVN: "r2", Released: released}}
	}
	for name, tc := range map[string]struct {
		w          Written
		outcome    metrics.Outcome
		reason     dynalease.LostReason
		holder     string
		wantCauses bool
	}{
		"landed":             {w: Written{Landed: true, Item: row("me", false)}, outcome: metrics.OK},
		"not confirmed":      {w: Written{Err: errors.New("timeout")}, outcome: metrics.Error},
		"stolen":             {w: Written{Lost: true, Item: row("other", false), Cause: cause}, outcome: metrics.Lost, reason: dynalease.Stolen, holder: "other", wantCauses: true},
		"released elsewhere": {w: Written{Lost: true, Item: row("other", true), Cause: cause}, outcome: metrics.Lost, reason: dynalease.ReleasedElsewhere, holder: "other", wantCauses: true},
		"deleted":            {w: Written{Lost: true, Missing: true, Cause: cause}, outcome: metrics.Lost, reason: dynalease.Deleted, wantCauses: true},
	} {
		if got := tc.w.Outcome(); got != tc.outcome {
			t.Errorf("%s: Outcome() = %v, want %v", name, got, tc.outcome)
		}
		if !tc.w.Lost {
			continue
		}
		lost := tc.w.Loss("lease-a")
		if lost.Lease != "lease-a" || lost.Reason != tc.reason || lost.Holder != tc.holder {
			t.Errorf("%s: Loss() = %+v, want reason %v holder %q on lease-a", name, lost, tc.reason, tc.holder)
		}
		if tc.wantCauses && !errors.Is(lost, resourcelock.ErrConflict) {
			t.Errorf("%s: Loss() = %v, does not carry the write's own error", name, lost)
		}
		if !errors.Is(lost, dynalease.ErrLost) {
			t.Errorf("%s: Loss() = %v, does not match dynalease.ErrLost", name, lost)
		}
	}
}
