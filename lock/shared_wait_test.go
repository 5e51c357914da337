package lock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// A writer that takes the key again and again (Acquire, 400 ms of work,
// Release) does not starve a reader: the reader waits in the key's queue,
// where the writer's release sees it, and is let in once the writer's
// stint has passed, as an exclusive waiter would be.
func TestAWriterThatTakesTheKeyAgainDoesNotStarveAReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memorystore.New()
		w := newBubbleClient(t, store, "w", true)
		r := newBubbleClient(t, store, "r", true)
		stop := make(chan struct{})
		looped := make(chan error, 1)
		go func() {
			for {
				l, err := w.Acquire(ctx, "k", lock.WithAdditionalWait(time.Hour))
				if err != nil {
					looped <- err
					return
				}
				time.Sleep(400 * time.Millisecond)
				if err := l.Release(ctx); err != nil {
					looped <- err
					return
				}
				select {
				case <-stop:
					looped <- nil
					return
				default:
				}
			}
		}()
		defer func() {
			close(stop)
			if err := <-looped; err != nil {
				t.Errorf("the writer's loop: %v", err)
			}
		}()
		time.Sleep(2 * time.Second)
		for i := range 5 {
			start := time.Now()
			l, err := r.AcquireShared(ctx, "k", lock.WithAdditionalWait(10*time.Second))
			if err != nil {
				t.Fatalf("reader %d beside a writer that takes the key again: %v", i, err)
			}
			// The stint (one refresh period by default), one hold, and a
			// poll of the reader's, with its jitter.
			if waited := time.Since(start); waited > 3*time.Second {
				t.Fatalf("reader %d waited %v, want within the writer's stint, a hold and a poll", i, waited)
			}
			time.Sleep(300 * time.Millisecond)
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Readers and writers are served in the order they queued: readers queued
// before a writer hold the key together once the writer before them
// releases, the writer after them waits for them, and a reader that
// queued behind that writer waits for it (it does not join the readers
// ahead of it).
func TestReadersAndWritersAreServedInTheOrderTheyQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueueScript(t, memorystore.New())
		q.start("w1", false)
		q.want("w1")
		q.start("r1", true)
		q.start("r2", true)
		q.start("w2", false)
		q.start("r3", true)
		q.none(5 * time.Second)
		q.release("w1")
		q.want("r1", "r2")
		q.none(10 * time.Second) // r3 waits behind w2, which waits for the readers
		q.release("r1", "r2")
		q.want("w2")
		q.release("w2")
		q.want("r3")
		q.release("r3")
	})
}

// queueScript runs holders of one key, each on a client of its own, and
// checks who holds when.
type queueScript struct {
	t       *testing.T
	store   *memorystore.Store
	held    chan string
	gates   map[string]chan struct{} // closed to release each
	clients map[string]*lock.Client
	wg      sync.WaitGroup
}

func newQueueScript(t *testing.T, store *memorystore.Store) *queueScript {
	q := &queueScript{t: t, store: store, held: make(chan string, 16), gates: map[string]chan struct{}{}}
	t.Cleanup(func() {
		for _, ch := range q.gates {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
		q.wg.Wait()
	})
	return q
}

// start has id ask for the key (shared or not), on a client of its own,
// then waits a little, so that each asks after the one before has queued.
func (q *queueScript) start(id string, shared bool) { q.startOn(id, id, shared) }

// startOn is start on the client named client (made at its first use):
// several waits of one client.
func (q *queueScript) startOn(id, client string, shared bool) {
	if q.clients == nil {
		q.clients = map[string]*lock.Client{}
	}
	c := q.clients[client]
	if c == nil {
		c = newBubbleClient(q.t, q.store, client, true)
		q.clients[client] = c
	}
	gate := make(chan struct{})
	q.gates[id] = gate
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		ctx := context.Background()
		var l *lock.Lock
		var err error
		if shared {
			l, err = c.AcquireShared(ctx, "k", lock.WithAdditionalWait(time.Hour))
		} else {
			l, err = c.Acquire(ctx, "k", lock.WithAdditionalWait(time.Hour))
		}
		if err != nil {
			q.held <- id + " failed: " + err.Error()
			return
		}
		q.held <- id
		<-gate
		if err := l.Release(ctx); err != nil {
			q.held <- id + "'s release failed: " + err.Error()
		}
	}()
	time.Sleep(100 * time.Millisecond)
}

// want checks that exactly ids come to hold next (in any order), within
// a few minutes.
func (q *queueScript) want(ids ...string) {
	q.t.Helper()
	for range ids {
		select {
		case got := <-q.held:
			if !slices.Contains(ids, got) {
				q.t.Fatalf("%s holds, want %v", got, ids)
			}
		case <-time.After(5 * time.Minute):
			it, _ := rows.MustRaw(q.store).Item(resourcelock.Key{Partition: "k"})
			q.t.Fatalf("nobody came to hold; want %v; the row: %+v, queue %+v, readers %+v", ids, it.Record, it.Queue, it.Readers)
		}
	}
}

// none checks that nobody comes to hold for d.
func (q *queueScript) none(d time.Duration) {
	q.t.Helper()
	select {
	case got := <-q.held:
		q.t.Fatalf("%s holds", got)
	case <-time.After(d):
	}
}

// release has ids release.
func (q *queueScript) release(ids ...string) {
	for _, id := range ids {
		close(q.gates[id])
	}
}

// Entries of readers that crashed holding are dropped by the live readers'
// writes once silent for their lease, with no writer ever coming: with
// readers that always overlap, dead entries do not pile up to the
// readers' limit.
func TestSilentReadersEntriesAreDroppedWithoutAWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memorystore.New()
		live := newBubbleClient(t, store, "live", true)
		l, err := live.AcquireShared(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		// Another live reader, renewing: never dropped.
		l2, err := newBubbleClient(t, store, "live-2", true).AcquireShared(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		// Readers that crash holding, one every few seconds: they never
		// renew nor release.
		for i := range 10 {
			crashed := newBubbleClient(t, store, fmt.Sprint("crashed-", i), false)
			if _, err := crashed.AcquireShared(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
		}
		readers := func() int {
			it, _ := rows.MustRaw(store).Item(resourcelock.Key{Partition: "k"})
			return len(it.Readers)
		}
		if n := readers(); n < 5 {
			t.Fatalf("%d entries right after the last crash, want the recent crashes' still there (within their lease)", n)
		}
		// The last crashed 3 s ago: its lease (20 s) and a heartbeat
		// period of the live reader (its renewals drop what is silent).
		time.Sleep(20*time.Second + 5*time.Second) // the default heartbeat period
		if n := readers(); n != 2 {
			it, _ := rows.MustRaw(store).Item(resourcelock.Key{Partition: "k"})
			t.Fatalf("%d entries after every crashed reader's lease, want the two live ones' alone: %+v", n, it.Readers)
		}
		time.Sleep(5 * time.Minute)
		if !l.IsHeld() || !l2.IsHeld() || readers() != 2 {
			t.Fatalf("the live readers: held %v and %v, %d entries; want both held, alone", l.IsHeld(), l2.IsHeld(), readers())
		}
	})
}

// Several waits of one client on one key keep their places: a hand-over
// to one of them is confirmed by that one alone (not by another wait of
// the same client, which would also take the waiters ahead of it out of
// the queue), and a release by the client's own writer hands the key to
// the client's own reader queued next, rather than dropping its entry as
// a stale one.
func TestWaitsOfOneClientKeepTheirPlaces(t *testing.T) {
	t.Run("a hand-over to one of them", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueueScript(t, memorystore.New())
			q.start("x", false)
			q.want("x")
			q.startOn("r1", "c", true)
			q.start("w", false)
			q.startOn("r2", "c", true)
			q.none(30 * time.Second)
			q.release("x")
			q.want("r1")
			q.none(5 * time.Second) // r2 is behind w
			q.release("r1")
			q.want("w")
			q.release("w")
			q.want("r2")
			q.release("r2")
		})
	})
	t.Run("its own writer's release", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueueScript(t, memorystore.New())
			q.startOn("cw", "c", false)
			q.want("cw")
			q.startOn("cr", "c", true)
			q.start("y", false)
			q.none(30 * time.Second)
			q.release("cw")
			q.want("cr")
			q.release("cr")
			q.want("y")
			q.release("y")
		})
	})
}

// A reader that gives up after the key was handed to it declines the
// hand-over (it passes the key to the next waiter), as a writer does: the
// writer queued behind it does not wait out the reader's lease.
func TestAReaderThatGivesUpDeclinesAHandOverToIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memorystore.New()
		x := newBubbleClient(t, mem, "x", true)
		faults := faulty.New(rows.MustOpen(mem))
		c, err := lock.New(lock.Config{Store: rows.Sealed(faults), Identity: "c", LeaseDuration: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		w := newBubbleClient(t, mem, "w", true)
		held, err := x.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		reader := make(chan error, 1)
		go func() {
			_, err := c.AcquireShared(rctx, "k", lock.WithAdditionalWait(time.Hour))
			reader <- err
		}()
		time.Sleep(time.Second) // the reader queues
		writer := make(chan time.Time, 1)
		go func() {
			if l, err := w.Acquire(ctx, "k", lock.WithAdditionalWait(time.Hour)); err == nil {
				writer <- time.Now()
				_ = l.Release(ctx)
			}
		}()
		time.Sleep(5 * time.Second)
		faults.Inject(faulty.OpGet, -1, faulty.Fault{Err: errors.New("network unreachable")}) // c's reads fail from now
		if err := held.Release(ctx); err != nil {                                             // handed to c's reader, which does not see it
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		cancel()
		gaveUp := time.Now()
		<-reader
		got := <-writer
		if waited := got.Sub(gaveUp); waited > 3*time.Second {
			t.Fatalf("the writer behind took the key %v after the reader gave up, want within a few polls (the reader declines)", waited)
		}
	})
}
