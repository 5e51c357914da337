package sim

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// progress counts the steps of every world of the process, for Watchdog.
var progress atomic.Int64

// Watchdog watches, in real time, that the histories of the process make
// progress: a goroutine that blocks on a lock whose holder waits on a
// request (not a wait the scheduler can see: synctest counts a goroutine
// blocked on a mutex as running) stops every step. Then it prints every
// goroutine's stack and exits the process, rather than let the test hang
// until its timeout. Start it outside any bubble; call stop when done.
func Watchdog(stall time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		last, since := progress.Load(), time.Now()
		tick := time.NewTicker(stall / 10)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if n := progress.Load(); n != last {
				last, since = n, time.Now()
				continue
			}
			if time.Since(since) < stall {
				continue
			}
			buf := make([]byte, 1<<24)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "sim: no step for %v: a goroutine blocks where the scheduler cannot see it (a lock held across a request?)\n%s", stall, buf)
			os.Exit(2)
		}
	}()
	return func() { close(done) }
}
