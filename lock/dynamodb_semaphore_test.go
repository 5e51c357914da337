package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
)

// Twenty clients on a semaphore of three permits, each acquiring, holding
// briefly, releasing and pausing, four times over: never more than three
// hold at once, and every client gets its four. The test counts
// acquisitions, not time: a busy machine makes it slower, never wrong; only
// a client still short of its four after two minutes (starved) fails it.
func TestDynamoDBSemaphoreNeverAdmitsMoreThanItsPermits(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	const clients, permits, rounds = 20, 3, 4
	var holding, most atomic.Int32
	acquired := make([]atomic.Int32, clients)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range clients {
		c := e.newClient() // heartbeats every 250 ms: slot writes under way while others read
		wg.Go(func() {
			for range rounds {
				l, err := c.AcquirePermit(ctx, "pay", permits, lock.WithAdditionalWait(time.Minute))
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, lock.ErrLocked) {
						t.Errorf("client %d: AcquirePermit: %v", i, err)
					} else {
						t.Logf("client %d gave up: %v", i, err)
					}
					return
				}
				n := holding.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				acquired[i].Add(1)
				time.Sleep(30 * time.Millisecond)
				holding.Add(-1)
				if err := l.Release(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("client %d: Release: %v", i, err)
					return
				}
				time.Sleep(150 * time.Millisecond) // the client's other work
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > permits {
		t.Fatalf("%d held permits at once, over %d", m, permits)
	}
	total := 0
	for i := range acquired {
		n := int(acquired[i].Load())
		total += n
		if n < rounds {
			t.Errorf("client %d acquired %d permits of its %d in two minutes", i, n, rounds)
		}
	}
	t.Logf("%d acquisitions by %d clients, at most %d at once", total, clients, most.Load())
}
