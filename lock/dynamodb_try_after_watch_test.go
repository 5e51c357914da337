package lock_test

import (
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
)

// A try that finds a key held notes its holder's RVN; once that holder has
// released the row (kept, or deleted) and more than its lease has passed,
// the next try's takeover of the noted RVN is refused by DynamoDB, and the
// try takes the free row in the same call instead of reporting it locked.
// The sleeps only need to outlast the lease: a slow machine makes them
// longer, never shorter.
func TestDynamoDBTryAfterAWatchOlderThanTheLeaseTakesAFreedRow(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	for _, deleted := range []bool{false, true} {
		name := map[bool]string{false: "released", true: "deleted"}[deleted]
		t.Run(name, func(t *testing.T) {
			holder, waiter := e.newTimedClient(), e.newTimedClient()
			var opts []lock.AcquireOption
			if deleted {
				opts = append(opts, lock.WithDeleteOnRelease())
			}
			// One key, and a set whose second member is the key.
			key, other := "try-"+name, "try-set-"+name
			for _, try := range []func() (*lock.Lock, error){
				func() (*lock.Lock, error) { return waiter.TryAcquire(t.Context(), key) },
				func() (*lock.Lock, error) { return waiter.TryAcquireSet(t.Context(), []string{other, key}) },
			} {
				held := mustAcquire(t, holder, key, opts...)
				if l, err := try(); err == nil {
					_ = l.Release(t.Context())
					t.Fatal("a try took a held key")
				}
				mustRelease(t, held)
				if deleted && e.item(key) != nil {
					t.Fatal("the release with WithDeleteOnRelease left the row")
				}
				time.Sleep(testLease + testRefresh)
				l, err := try()
				if err != nil {
					t.Fatalf("a try of a row freed since its holder was seen: %v", err)
				}
				if got := str(e.item(key), "recordVersionNumber"); got != l.RVN() {
					t.Fatalf("the row carries RVN %q, the lock %q", got, l.RVN())
				}
				mustRelease(t, l)
			}
		})
	}
}
