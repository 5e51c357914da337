package main

import (
	"fmt"
	"time"

	"github.com/dynalease/dynalease/internal/rvnlease"
	"github.com/dynalease/dynalease/internal/timing"
)

// noticeSlack is how long the lock client may take, at worst, from the end
// of its validity to this process signalling the child: the lock's own
// timer fires at that instant, and the signal follows in microseconds; a
// second covers a busy machine.
const noticeSlack = time.Second

// runTiming is what run derives from its flags for the lock client.
type runTiming struct {
	lease, margin, heartbeat, requestTimeout time.Duration
}

// runTimes derives run's lock timing from --lease, --heartbeat,
// --request-timeout and --grace: a safety margin of grace + noticeSlack (or
// 1% of a long lease, rvnlease.MinMargin), so that the command is stopped
// before anyone else may take the lock over.
// Settings it accepts are accepted by lock.New; others are usage errors
// naming the flags.
func (c *common) runTimes(grace time.Duration) (runTiming, error) {
	if err := c.checkCommon(grace); err != nil {
		return runTiming{}, err
	}
	t := runTiming{lease: c.lease, margin: max(timing.Add(grace, noticeSlack), rvnlease.MinMargin(c.lease)), heartbeat: c.heartbeat}
	if t.margin >= c.lease/2 {
		return runTiming{}, fmt.Errorf("--lease %v is too short for --grace %v: the safety margin (grace + %v) must stay under half the lease", c.lease, grace, noticeSlack)
	}
	if t.heartbeat == 0 {
		t.heartbeat = c.lease / 4
	}
	room := (c.lease - t.margin) / 2
	if t.heartbeat < rvnlease.MinPeriod || t.heartbeat > room-rvnlease.MinPeriod {
		return runTiming{}, fmt.Errorf("--heartbeat %v: want between %v and %v for --lease %v and --grace %v", c.heartbeat, rvnlease.MinPeriod, room-rvnlease.MinPeriod, c.lease, grace)
	}
	t.requestTimeout = min(c.requestTimeout, room-t.heartbeat)
	return t, nil
}

// electTiming is what elect derives from its flags for the Elector.
type electTiming struct {
	lease, renew, retry, requestTimeout time.Duration
}

// electTimes derives elect's timing from --lease, --request-timeout,
// --grace and --retry (lease/10 when 0). The renew deadline leaves grace +
// noticeSlack (or 1% of a long lease, rvnlease.MinMargin) before others
// may take over (the command is stopped by
// then), and must itself give a stopping command grace + noticeSlack to
// return, so that a handover releases the record. Settings it accepts are
// accepted by election.New; others are usage errors naming the flags.
func (c *common) electTimes(grace, retry time.Duration) (electTiming, error) {
	if err := c.checkCommon(grace); err != nil {
		return electTiming{}, err
	}
	if retry < 0 {
		return electTiming{}, fmt.Errorf("--retry %v is negative", retry)
	}
	if retry == 0 {
		retry = max(c.lease/10, rvnlease.MinPeriod)
	}
	stopping := timing.Add(grace, noticeSlack)
	// A long lease needs more room than that: 1% of
	// the renew deadline (lease − renew ≥ renew/100 once lease − renew ≥
	// lease/101), or election.New refuses it.
	renew := c.lease - max(stopping, c.lease/101+time.Millisecond)
	if renew < stopping || renew <= timing.Add(retry, retry) || retry < rvnlease.MinPeriod {
		return electTiming{}, fmt.Errorf("--lease %v is too short for --grace %v and --retry %v: want lease ≥ 2 × (grace + %v), a renew deadline (lease − grace − %v) over two retries, and --retry at least %v",
			c.lease, grace, retry, noticeSlack, noticeSlack, rvnlease.MinPeriod)
	}
	t := electTiming{lease: c.lease, renew: renew, retry: retry, requestTimeout: min(c.requestTimeout, renew-retry)}
	return t, nil
}

// checkCommon refuses the duration flags that no command can use.
func (c *common) checkCommon(grace time.Duration) error {
	switch {
	case c.lease <= 0:
		return fmt.Errorf("--lease %v: want a positive duration", c.lease)
	case c.heartbeat < 0:
		return fmt.Errorf("--heartbeat %v is negative", c.heartbeat)
	case c.requestTimeout < rvnlease.MinPeriod:
		return fmt.Errorf("--request-timeout %v: want at least %v", c.requestTimeout, rvnlease.MinPeriod)
	case grace < 0:
		return fmt.Errorf("--grace %v is negative", grace)
	}
	return nil
}
