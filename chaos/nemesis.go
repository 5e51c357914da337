package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The nemesis's repertoire. Each action targets the leader (or a lock
// holder), or for the network faults sometimes any worker, and heals by
// itself; every start and heal is logged on the shared clock.
var allActions = []string{
	"stop-leader", // SIGSTOP the leader for 1.5 leases, then SIGCONT
	"stop-holder", // the same for a lock holder
	"pause-write", // hold the leader's next guarded write past the lock checks, then stop the leader past its lease: the write leaves after the takeover
	"kill",        // SIGKILL and restart under a new identity
	"kill-same",   // SIGKILL and restart under the same identity (a restarted pod)
	"kill-queued", // SIGKILL a lock worker queued for a key, holding none, and restart it under a new identity; watch its turn come and the lock taken over (queued.go)
	"term",        // SIGTERM: graceful handover, then restart
	"partition",   // black-hole the leader's proxy for 1.5 leases
	"drop",        // drop half the answers of writes that landed, for 2 leases
	"throttle",    // answer half the requests ThrottlingException, for 2 leases
	"5xx",         // answer half the requests 500, for 2 leases
	"reset",       // close half the connections unanswered, for 2 leases
	"latency",     // delay every request by 90% of the request timeout, for 2 leases
	"drift",       // run a worker's clock (the leader's, or any) fast or slow by the drift ρ for 3 leases, while the next actions go on
	"slow-cut",    // run the leader's clock slow by the drift ρ and black-hole its proxy, for 1.5 leases: the margin's worst case
	"offset",      // set a worker's wall clock (the schedule's only) seconds ahead or behind, or back to right; it stays so
	"quiet",       // nothing, for a lease
}

func knownAction(a string) bool { return slices.Contains(allActions, a) }

// pauseFor is how long a paused guarded write is held: past the stop that
// follows it, so that it leaves after another worker took over.
func (c *controller) pauseFor() time.Duration {
	return c.stopFor() + time.Second + 150*time.Millisecond
}

func (c *controller) stopFor() time.Duration { return c.cfg.lease * 3 / 2 }

// nemesis runs shuffled rounds of the actions, with quiet after each,
// until the deadline; a round once begun is finished, so every action runs
// at least once however short the run.
func (c *controller) nemesis(ctx context.Context, until time.Time) {
	for ctx.Err() == nil && time.Now().Before(until) {
		order := slices.Clone(c.cfg.actions)
		c.rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, a := range order {
			if ctx.Err() != nil {
				return
			}
			c.restartCrashed()
			c.act(ctx, a)
			sleepCtx(ctx, c.cfg.lease+time.Duration(c.rnd.Int64N(int64(c.cfg.lease))))
		}
	}
}

func (c *controller) act(ctx context.Context, a string) {
	switch a {
	case "stop-leader", "stop-holder":
		in := c.leader(ctx)
		if a == "stop-holder" {
			in = c.holder(ctx)
		}
		c.pause(in, a, "")
	case "pause-write":
		in := c.leader(ctx)
		c.signal(in, syscall.SIGUSR1)
		time.Sleep(150 * time.Millisecond) // the next guarded write is under way
		c.pause(in, a, "write held "+c.pauseFor().String())
	case "kill", "kill-same":
		in := c.pick(ctx, 2)
		c.mu.Lock()
		in.killed = true
		c.mu.Unlock()
		c.event(a, in, "")
		c.signal(in, syscall.SIGKILL)
		<-in.done
		time.Sleep(200 * time.Millisecond)
		id := in.id
		if a == "kill" {
			c.mu.Lock()
			id = fmt.Sprintf("w%d-%d", in.slot+1, c.instances+1)
			c.mu.Unlock()
		}
		c.restart(in.slot, id)
	case "kill-queued":
		c.killQueued(ctx)
	case "term":
		in := c.leader(ctx)
		c.mu.Lock()
		in.killed = true
		c.mu.Unlock()
		c.event(a, in, "")
		c.signal(in, syscall.SIGTERM)
		select {
		case <-in.done:
		case <-time.After(2*c.cfg.lease + 5*time.Second):
			c.event("term-stuck", in, "killed")
			c.signal(in, syscall.SIGKILL)
			<-in.done
		}
		c.event(a+"-exited", in, "")
		c.restart(in.slot, in.id)
	case "partition":
		in := c.leader(ctx)
		c.netFault(in, a, fault{Kind: faultBlackhole}, c.stopFor())
	case "drop":
		c.netFault(c.pick(ctx, 2), a, fault{Kind: faultDrop, P: 0.5}, 2*c.cfg.lease)
	case "throttle":
		c.netFault(c.pick(ctx, 2), a, fault{Kind: faultThrottle, P: 0.5}, 2*c.cfg.lease)
	case "5xx":
		c.netFault(c.pick(ctx, 2), a, fault{Kind: faultServer, P: 0.5}, 2*c.cfg.lease)
	case "reset":
		c.netFault(c.pick(ctx, 2), a, fault{Kind: faultReset, P: 0.5}, 2*c.cfg.lease)
	case "latency":
		timeout := min(c.cfg.retry, c.cfg.renew-c.cfg.retry) // the elector's default request timeout
		c.netFault(c.pick(ctx, 2), a, fault{Kind: faultLatency, Delay: timeout * 9 / 10}, 2*c.cfg.lease)
	case "drift":
		c.drift(c.pick(ctx, 2), 3*c.cfg.lease)
	case "slow-cut":
		// The leader believes its term longer than others wait, and
		// cannot hear that they took over: only the margin keeps the
		// belief inside the lease.
		in := c.leader(ctx)
		if c.setRate(in, 1/(1+c.cfg.drift), a) {
			c.netFault(in, a, fault{Kind: faultBlackhole}, c.stopFor())
			c.setRate(in, 1, a+"-heal")
		}
	case "offset":
		c.offset(c.random())
	case "quiet":
		c.event(a, nil, "")
		time.Sleep(c.cfg.lease)
	}
}

// offsets are the wall-clock offsets the offset action sets, in turn.
var offsets = []time.Duration{3 * time.Second, -3 * time.Second, 1500 * time.Millisecond, -1500 * time.Millisecond, 0}

// offset sets in's wall clock (the one its scheduled job reads to pick
// slots) the next of offsets away from the shared clock: the offset file,
// then SIGUSR2. It stays so until the next offset action on in.
func (c *controller) offset(in *instance) {
	c.mu.Lock()
	c.offsets++
	d := offsets[c.offsets%len(offsets)]
	c.mu.Unlock()
	if err := os.WriteFile(in.offsetFile, []byte(d.String()), 0o644); err != nil {
		c.logf("writing %s: %v", in.offsetFile, err)
		return
	}
	c.event("offset", in, "wall clock "+d.String())
	c.signal(in, syscall.SIGUSR2)
}

// drift runs in's clock at a rate off by the drift ρ (fast, 1+ρ, or slow,
// 1/(1+ρ), in turn, slow first) for d, in the background: the actions that
// follow (a stop, a partition) then meet a worker whose clock drifts. A
// slow leader believes its term longer; a fast waiter takes over sooner.
// Every change is logged on the shared clock, as the worker logs it too.
func (c *controller) drift(in *instance, d time.Duration) {
	c.mu.Lock()
	c.drifts++
	slow := c.drifts%2 == 1 // slow first: the leader's belief lasts longer
	c.mu.Unlock()
	rate := 1 + c.cfg.drift
	if slow {
		rate = 1 / rate
	}
	if !c.setRate(in, rate, "drift") {
		return
	}
	c.background.Go(func() {
		time.Sleep(d)
		c.setRate(in, 1, "drift-heal")
	})
}

// setRate tells in to run its clock at rate: the rate file, then SIGUSR2.
func (c *controller) setRate(in *instance, rate float64, action string) bool {
	if err := os.WriteFile(in.rateFile, []byte(strconv.FormatFloat(rate, 'g', -1, 64)), 0o644); err != nil {
		c.logf("writing %s: %v", in.rateFile, err)
		return false
	}
	c.event(action, in, "rate "+strconv.FormatFloat(rate, 'g', 6, 64))
	c.signal(in, syscall.SIGUSR2)
	return true
}

// pause stops in for stopFor, then continues it.
func (c *controller) pause(in *instance, action, detail string) {
	c.event(action, in, detail)
	c.signal(in, syscall.SIGSTOP)
	time.Sleep(c.stopFor())
	c.signal(in, syscall.SIGCONT)
	c.event(action+"-heal", in, "")
}

// netFault applies f to in's proxy for d.
func (c *controller) netFault(in *instance, action string, f fault, d time.Duration) {
	c.event(action, in, fmt.Sprintf("%+v", f))
	c.proxies[in.slot].set(f)
	time.Sleep(d)
	c.proxies[in.slot].set(fault{})
	c.event(action+"-heal", in, "")
}

func (c *controller) event(action string, in *instance, detail string) {
	e := Event{Ev: "nemesis", Action: action, Detail: detail}
	if in != nil {
		e.Worker, e.Pid = in.name, in.cmd.Process.Pid
	}
	c.nem.log(e)
	c.logf("%s %s %s", action, e.Worker, detail)
}

func (c *controller) signal(in *instance, sig syscall.Signal) {
	if err := in.cmd.Process.Signal(sig); err != nil && err != os.ErrProcessDone {
		c.logf("signal %v to %s: %v", sig, in.name, err)
	}
}

func (c *controller) restart(slot int, id string) {
	if err := c.start(slot, id); err != nil {
		c.logf("restarting slot %d: %v", slot, err)
		c.nem.log(Event{Ev: "nemesis", Action: "restart-failed", Detail: err.Error()})
	}
}

// restartCrashed restarts workers that exited although nobody killed them:
// the checker reports those exits as crashes.
func (c *controller) restartCrashed() {
	c.mu.Lock()
	var crashed []*instance
	for _, in := range c.current {
		select {
		case <-in.done:
			if !in.killed {
				crashed = append(crashed, in)
			}
		default:
		}
	}
	c.mu.Unlock()
	for _, in := range crashed {
		c.event("crashed", in, fmt.Sprint(in.exit))
		c.restart(in.slot, in.id)
	}
}

// leader returns the instance that the lease record names, or a random one.
func (c *controller) leader(ctx context.Context) *instance {
	if in := c.byOwner(ctx, "leader"); in != nil {
		return in
	}
	return c.random()
}

// holder returns the instance that holds one of the lock keys, or a random
// one.
func (c *controller) holder(ctx context.Context) *instance {
	for _, k := range c.rnd.Perm(c.cfg.keys) {
		if in := c.byOwner(ctx, fmt.Sprintf("k%d", k)); in != nil {
			return in
		}
	}
	return c.random()
}

// pick returns the leader with probability 1-1/n, otherwise any worker.
func (c *controller) pick(ctx context.Context, n int) *instance {
	if c.rnd.IntN(n) == 0 {
		return c.random()
	}
	return c.leader(ctx)
}

func (c *controller) random() *instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current[c.rnd.IntN(len(c.current))]
}

// byOwner reads the row of key straight from DynamoDB Local and returns the
// running instance it names as holder, if any.
func (c *controller) byOwner(ctx context.Context, key string) *instance {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := c.ddb.GetItem(rctx, &dynamodb.GetItemInput{TableName: aws.String(c.locks), ConsistentRead: aws.Bool(true),
		Key: map[string]typesAV{"key": strAV(key)}})
	if err != nil || out.Item == nil {
		return nil
	}
	if _, released := out.Item["isReleased"]; released {
		return nil
	}
	owner, _ := out.Item["ownerName"].(*types.AttributeValueMemberS)
	if owner == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, in := range c.current {
		if in.id == owner.Value {
			return in
		}
	}
	return nil
}

type typesAV = types.AttributeValue

func strAV(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
