package rvnlease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease/internal/testkit/logtest"
)

func TestFailingKeepsTheStartOfAFailureUntilItClears(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	var reports []string
	f := NewFailing(fc, logr.Discard(), func(err error, since time.Time) {
		if err == nil {
			reports = append(reports, "cleared")
			return
		}
		reports = append(reports, err.Error()+"@"+since.Sub(t0).String())
	})
	f.Note("", nil) // nothing failing: nothing to report
	f.Note("", errors.New("refused"))
	fc.Step(time.Second)
	f.Note("", errors.New("throttled")) // still failing, since the first
	if err, since := f.Last(); err == nil || err.Error() != "throttled" || !since.Equal(t0) {
		t.Fatalf("Last = %v since %v, want the latest error since the first", err, since)
	}
	f.Note("", nil)
	if err, since := f.Last(); err != nil || !since.IsZero() {
		t.Fatalf("Last after a success = %v since %v", err, since)
	}
	if got := strings.Join(reports, " "); got != "refused@0s throttled@0s cleared" {
		t.Fatalf("reports %q", got)
	}
}

// Review issue, bug 11: one key's success does not clear another key's
// ongoing failure; Last reports the key failing longest.
func TestFailingPerKey(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	var last error
	f := NewFailing(fc, logr.Discard(), func(err error, _ time.Time) { last = err })
	f.Note("a", errors.New("a throttled"))
	fc.Step(time.Second)
	f.Note("b", errors.New("b refused"))
	f.Note("b", nil)
	if err, since := f.Last(); err == nil || err.Error() != "a throttled" || !since.Equal(t0) {
		t.Fatalf("Last after b's success = %v since %v, want a's failure since the start", err, since)
	}
	if last == nil {
		t.Fatal("the report was cleared by another key's success")
	}
	f.Note("b", errors.New("b refused"))
	f.Note("a", nil)
	if err, since := f.Last(); err == nil || err.Error() != "b refused" || !since.Equal(t0.Add(time.Second)) {
		t.Fatalf("Last = %v since %v, want b's failure", err, since)
	}
	f.Note("b", nil)
	if err, _ := f.Last(); err != nil || last != nil {
		t.Fatalf("Last = %v, report %v once nothing fails", err, last)
	}
}

// Forget drops a key's failure without the "succeed again" line: its
// caller stopped retrying.
func TestFailingForget(t *testing.T) {
	fc := clocktesting.NewFakeClock(t0)
	var last error
	rec := &logtest.Recorder{}
	f := NewFailing(fc, rec.Logger(), func(err error, _ time.Time) { last = err })
	f.Note("a", errors.New("denied"))
	f.Forget("a")
	if err, _ := f.Last(); err != nil || last != nil {
		t.Fatalf("Last %v, report %v after Forget", err, last)
	}
	if len(rec.Find("requests to the lock table succeed again")) != 0 {
		t.Fatal("Forget said that requests succeed again")
	}
}
