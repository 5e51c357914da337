package lock_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// Bug 6 of the engine issue: errors that waiting cannot fix end Acquire at
// once with their cause, even with no deadline on ctx (this test would
// hang without the fix; the 2-minute bound only turns a hang into a
// failure, whatever the machine's speed).
func TestDynamoDBUnfixableErrorsEndAcquireWithTheirCause(t *testing.T) {
	t.Parallel()
	raw := ddbtest.Client(t)
	wrongSchema := ddbtest.NewTable(t, raw, ddbtest.TableSpec{PartitionKey: "id"})
	for _, tc := range []struct {
		name  string
		table string
		want  func(error) bool
	}{
		{"missing table", "no-such-table", func(err error) bool { return errors.Is(err, resourcelock.ErrPermanent) }},
		{"another key schema", wrongSchema, resourcelock.Permanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := lock.NewOn(raw, tc.table, lock.WithLeaseDuration(time.Minute), lock.WithRequestTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err = c.Acquire(ctx, "k")
			if err == nil || errors.Is(err, context.DeadlineExceeded) || !tc.want(err) {
				t.Fatalf("Acquire = %v, want the cause at once", err)
			}
			t.Logf("Acquire: %v", err)
		})
	}
}

// An unreachable table is retried, but Acquire gives up after its wait
// budget (this client's lease plus the additional wait, when no answer ever
// named a holder) with the last cause, not the caller's deadline.
func TestDynamoDBUnreachableTableEndsAcquireAfterItsBudget(t *testing.T) {
	t.Parallel()
	c, err := lock.NewOn(ddbtest.UnreachableClient(t), "locks", lock.WithLeaseDuration(time.Second),
		lock.WithHeartbeatPeriod(0), lock.WithRequestTimeout(200*time.Millisecond), lock.WithRefreshPeriod(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err = c.Acquire(ctx, "k")
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrLocked) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Acquire = %v, want the refused connection after the budget", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("gave up after %v, before its budget of one lease", waited)
	}
	t.Logf("Acquire: %v", err)
}
