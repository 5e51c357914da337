package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// The kill-queued action: SIGKILL a lock worker while it waits in a row's
// queue (fair waiting), holding no key, and restart it under a new
// identity. Its entry stays in the queue; when its turn comes, a release
// hands the lock to its ticket and nobody confirms, so the others wait for
// the dead waiter's lease, as for a silent holder, before one takes over.
// The controller watches the row until then and logs the turn
// ("queued-turn", when it saw the hand-over) and the takeover
// ("queued-taken"), or that the entry went before its turn
// ("queued-gone": a release deleted the row) or that the watch ran out
// ("queued-no-turn"). The checker measures the delay from the hand-over
// on the workers' own logs (see deadWaiters).

// victim is a queued waiter the action may kill.
type victim struct {
	in     *instance
	key    string
	ticket string
	place  int // in the queue, 0 the head
	queue  int // the queue's length
}

// killQueued runs the kill-queued action.
func (c *controller) killQueued(ctx context.Context) {
	var v *victim
	// Queues form and drain within a hold or two: look for a while.
	for deadline := time.Now().Add(4 * c.cfg.lockLease); v == nil && ctx.Err() == nil && time.Now().Before(deadline); {
		if v = c.queuedWaiter(ctx); v == nil {
			sleepCtx(ctx, c.cfg.retry/2)
		}
	}
	if v == nil {
		c.event("kill-queued-missed", nil, "nobody was queued")
		return
	}
	c.mu.Lock()
	v.in.killed = true
	c.mu.Unlock()
	c.nem.log(Event{Ev: "nemesis", Action: "kill-queued", Worker: v.in.name, Pid: v.in.cmd.Process.Pid, Role: "lock:" + v.key,
		Detail: fmt.Sprintf("place %d of %d, ticket %s", v.place, v.queue, v.ticket)})
	c.logf("kill-queued %s lock:%s place %d of %d", v.in.name, v.key, v.place, v.queue)
	c.signal(v.in, syscall.SIGKILL)
	<-v.in.done
	time.Sleep(200 * time.Millisecond)
	c.mu.Lock()
	id := fmt.Sprintf("w%d-%d", v.in.slot+1, c.instances+1)
	c.mu.Unlock()
	c.restart(v.in.slot, id)
	c.watchDeadEntry(ctx, v)
}

// queuedWaiter reads every key's row and returns a running worker queued
// in one of them that holds no key, nor, if another will do, the
// election: the nearest the head of its queue, ties broken at random.
func (c *controller) queuedWaiter(ctx context.Context) *victim {
	var leader string
	if it, err := c.get(ctx, "leader"); err == nil && !it.Released {
		leader = it.HolderIdentity
	}
	holders := map[string]bool{}
	found := map[string]rows.Item{}
	for _, key := range c.keyNames() {
		it, err := c.get(ctx, key)
		if err != nil || it.Released {
			continue
		}
		holders[it.HolderIdentity] = true
		found[key] = it
	}
	var best *victim
	bestScore := 0
	for _, k := range c.rnd.Perm(c.cfg.keys) {
		key := "k" + strconv.Itoa(k)
		it, ok := found[key]
		if !ok {
			continue
		}
		for place, w := range it.Queue {
			in := c.running(w.Identity)
			if in == nil || holders[w.Identity] {
				continue
			}
			score := place
			if w.Identity == leader {
				score += 100 // its death would also end a term
			}
			if best == nil || score < bestScore {
				best, bestScore = &victim{in: in, key: key, ticket: w.Ticket, place: place, queue: len(it.Queue)}, score
			}
		}
	}
	return best
}

// watchDeadEntry reads the row of v's key every half retry period until
// the lock is handed to v's ticket, then until someone takes it over,
// logging each; or until the entry has gone or the watch runs out.
func (c *controller) watchDeadEntry(ctx context.Context, v *victim) {
	role := "lock:" + v.key
	log := func(action, detail string) {
		c.nem.log(Event{Ev: "nemesis", Action: action, Worker: v.in.name, Role: role, Detail: detail})
		c.logf("%s %s %s %s", action, v.in.name, role, detail)
	}
	var handed string // the RVN of the hand-over to the dead entry
	deadline := time.Now().Add(6 * c.cfg.lockLease)
	for ctx.Err() == nil {
		if time.Now().After(deadline) {
			if handed == "" {
				log("queued-no-turn", "")
			} else {
				log("queued-not-taken", "")
			}
			return
		}
		sleepCtx(ctx, c.cfg.retry/2)
		it, err := c.get(ctx, v.key)
		switch {
		case errors.Is(err, resourcelock.ErrNotFound):
			log("queued-gone", "the row was deleted")
			return
		case err != nil:
			continue
		case handed == "" && it.HandedTo == v.ticket && !it.Released:
			handed = it.RVN
			log("queued-turn", "handed over at RVN "+it.RVN)
			deadline = time.Now().Add(3 * c.cfg.lockLease)
		case handed == "" && record.Place(it, v.ticket) < 0:
			log("queued-gone", "the entry is not in the row, unhanded (a release deleted the row, created again between two reads; or it left)")
			return
		case handed != "" && it.RVN != handed:
			log("queued-taken", "by "+it.HolderIdentity)
			return
		}
	}
}

// get reads the row of key as the library decodes it.
func (c *controller) get(ctx context.Context, key string) (rows.Item, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return rows.MustOpen(c.store).Get(rctx, resourcelock.Key{Partition: key})
}

func (c *controller) keyNames() []string {
	keys := make([]string, c.cfg.keys)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	return keys
}

// running returns the running instance with identity id, or nil.
func (c *controller) running(id string) *instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, in := range c.current {
		if in.id == id {
			select {
			case <-in.done:
				return nil
			default:
				return in
			}
		}
	}
	return nil
}
