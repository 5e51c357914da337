//go:build unix

// Command demo is the leader-election demonstration behind "make demo".
//
// Three candidates (the program in the parent directory) compete for one
// lease on DynamoDB Local. The demo lets the first leader work for a few
// seconds, then kills it with SIGKILL, a crash that leaves the lease
// unreleased, and measures how long the survivors take to replace it; then
// it stops the new leader with SIGTERM, which releases the lease, and
// measures the handover to the last candidate. It prints every candidate's
// lines as they arrive, prefixed with its own elapsed time, and ends with a
// summary. All processes run on one machine, so the demo's clock is a common
// clock for the arrival of every line.
//
// It needs DYNAMODB_ENDPOINT and must run inside the module:
//
//	make demo
//	scripts/dynamodb-local.sh run -- go run ./examples/leader/demo -verbose
//
// It finishes by itself within a minute whatever happens, kills every
// candidate on the way out (Ctrl-C included), and exits non-zero when no
// leader was elected, a failover or handover did not happen, two candidates
// reported leading at the same time, or a candidate ended unexpectedly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/examples/internal/ddbclient"
	"github.com/dynalease/dynalease/internal/timing"
)

// The candidates' durations, passed on their command lines.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1500 * time.Millisecond
	retryPeriod   = 200 * time.Millisecond
)

// The demo's schedule.
const (
	globalTimeout = 45 * time.Second // everything, the build included
	electTimeout  = 15 * time.Second // for a first leader (a cold emulator is slow)
	// The first leader works this long, then crashes. A leader renews every
	// retryPeriod from its start, so the extra half period puts the crash
	// between two renewals rather than on one that may be in flight.
	firstTerm   = 4*time.Second + retryPeriod/2
	secondTerm  = 2 * time.Second
	lastTerm    = 1 * time.Second
	slack       = 3 * time.Second // past a bound, before a step counts as not done
	stopTimeout = 5 * time.Second // for a candidate to exit after SIGTERM
	probeEvery  = 100 * time.Millisecond
)

const (
	table        = "dynalease-demo"
	candidatePkg = "github.com/dynalease/dynalease/examples/leader"
)

func main() {
	verbose := flag.Bool("verbose", false, "also show the leaders' work ticks and renewals")
	flag.Parse()
	os.Exit(demoMain(*verbose))
}

func demoMain(verbose bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeoutCause(ctx, globalTimeout,
		fmt.Errorf("the demo's global timeout of %v passed", globalTimeout))
	defer cancel()

	d := &demo{
		start:       time.Now(),
		verbose:     verbose,
		lines:       make(chan *line, 1024),
		leading:     map[string]time.Duration{},
		lastRenewal: map[string]time.Duration{},
		stoppedAt:   map[string]time.Duration{},
		startLine:   map[string]*line{},
	}
	err := d.run(ctx)
	d.killAll()
	if d.tmp != "" {
		os.RemoveAll(d.tmp)
	}
	d.summary(err)
	if err != nil || len(d.problems) > 0 {
		return 1
	}
	return 0
}

// demo holds the candidates and what their lines said. Only the main
// goroutine touches it; the candidates' output reaches it through lines.
type demo struct {
	start    time.Time
	verbose  bool
	tmp      string
	children []*child
	lines    chan *line
	probe    *prober

	leading     map[string]time.Duration // candidate → when it started leading, by its own report
	lastRenewal map[string]time.Duration // candidate → estimated send time of its last confirmed write
	stoppedAt   map[string]time.Duration // candidate → its last stopped-leading line
	startLine   map[string]*line         // candidate → its last started-leading line
	overlap     bool                     // two candidates reported leading at once
	problems    []string

	res results
}

// results are the measurements the summary reports; times are the demo's
// elapsed time.
type results struct {
	candidatesAt        time.Duration
	first               *line
	crashed             string
	killAt              time.Duration
	crashedLastRenewal  time.Duration // -1 when unknown
	failover            *line
	stopped             string
	termAt              time.Duration
	stoppedLeadingAt    time.Duration // -1 when not seen before the handover
	handover            *line
	rttMedian, rttMax   time.Duration
	rttCount, probeErrs int
}

func (d *demo) now() time.Duration { return time.Since(d.start) }

func (d *demo) show(at time.Duration, who, text string) {
	fmt.Printf("%7.3fs %-7s | %s\n", at.Seconds(), who, text)
}

func (d *demo) say(format string, args ...any) {
	d.show(d.now(), "demo", fmt.Sprintf(format, args...))
}

func (d *demo) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.problems = append(d.problems, msg)
	d.say("PROBLEM: %s", msg)
}

func (d *demo) run(ctx context.Context) error {
	endpoint := os.Getenv("DYNAMODB_ENDPOINT")
	if endpoint == "" {
		return errors.New("DYNAMODB_ENDPOINT is not set; run the demo with `make demo`, which starts DynamoDB Local")
	}
	var err error
	if d.tmp, err = os.MkdirTemp("", "dynalease-demo-"); err != nil {
		return err
	}
	bin := filepath.Join(d.tmp, "leader")
	d.say("building the candidate: go build -o %s ./examples/leader", bin)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, candidatePkg)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the candidate: %w", orCause(ctx, err))
	}

	client, err := ddbclient.New(ctx) // the emulator's client: see ddbclient.New
	if err != nil {
		return err
	}
	// A fresh lease name per run, so that a leftover record on a server
	// that outlives one run cannot delay the next.
	name := "demo-" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	d.say("DynamoDB Local at %s; table %s, lease %s", endpoint, table, name)
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = dynamodbstore.CreateTable(tctx, client, table, dynamodbstore.TableOptions{})
	cancel()
	if err != nil {
		return fmt.Errorf("creating the table: %w", orCause(ctx, err))
	}
	if d.probe, err = newProber(client, name); err != nil {
		return err
	}
	d.say("warming the emulator up, then probing its round trip every %v", probeEvery)
	d.probe.warmUp(ctx, 1500*time.Millisecond)
	pctx, stopProbe := context.WithCancel(ctx)
	probeDone := make(chan struct{})
	go func() { defer close(probeDone); d.probe.run(pctx, probeEvery) }()
	defer func() {
		stopProbe()
		<-probeDone
		d.res.rttMedian, d.res.rttMax, d.res.rttCount, d.res.probeErrs = d.probe.stats()
	}()

	// 1. Three candidates start at once; one of them wins.
	d.say("starting cand-1, cand-2, cand-3 (lease %v, renew deadline %v, retry %v), each in its own process group",
		leaseDuration, renewDeadline, retryPeriod)
	d.res.candidatesAt = d.now()
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("cand-%d", i)
		err := d.startCandidate(id, bin, "-table", table, "-name", name, "-id", id,
			"-lease", leaseDuration.String(), "-renew", renewDeadline.String(), "-retry", retryPeriod.String(),
			"-show-renewals")
		if err != nil {
			return err
		}
	}
	if d.res.first, err = d.await(ctx, electTimeout, "no candidate started leading", startedLeading()); err != nil {
		return err
	}

	// 2. The leader works for a while, then crashes: SIGKILL, no release.
	if err := d.pause(ctx, d.res.first.at+firstTerm-d.now()); err != nil {
		return err
	}
	leader := d.currentLeader()
	if leader == "" {
		return fmt.Errorf("expected exactly one leader before the crash, found %d", len(d.leading))
	}
	d.res.crashed = leader
	d.say("SIGKILL to %s's process group: a crash, the lease is not released", leader)
	d.res.killAt = d.signal(d.child(leader), syscall.SIGKILL)
	d.endLeading(leader) // a killed process does nothing more
	// Its exit is reported after its last line, so wait for it before
	// looking for its last renewal.
	if err := d.awaitExit(ctx, d.child(leader)); err != nil {
		return err
	}
	d.res.crashedLastRenewal = -1
	if s, ok := d.lastRenewal[leader]; ok {
		d.res.crashedLastRenewal = s
		d.say("%s's last printed renewal was sent at %.3fs, %.3fs before the kill: by its own clock it led until %.3fs",
			leader, s.Seconds(), (d.res.killAt - s).Seconds(), (s + renewDeadline).Seconds())
	}
	failoverBound := leaseDuration + timing.MaxJittered(retryPeriod)
	if d.res.failover, err = d.awaitLeader(ctx, failoverBound+slack, "no survivor took over", leader); err != nil {
		return err
	}

	// 3. The new leader works, then is stopped gracefully: it releases.
	if err := d.pause(ctx, secondTerm); err != nil {
		return err
	}
	if leader = d.currentLeader(); leader == "" {
		return fmt.Errorf("expected exactly one leader before the graceful stop, found %d", len(d.leading))
	}
	d.res.stopped = leader
	d.say("SIGTERM to %s's process group: it lets its work return, then releases the lease", leader)
	d.res.termAt = d.signal(d.child(leader), syscall.SIGTERM)
	d.res.handover, err = d.awaitLeader(ctx, timing.MaxJittered(retryPeriod)+slack,
		"no candidate took over after the release", d.res.crashed, leader)
	if err != nil {
		return err
	}
	d.res.stoppedLeadingAt = -1
	if at, ok := d.stoppedAt[leader]; ok && at >= d.res.termAt {
		d.res.stoppedLeadingAt = at
	}
	if err := d.awaitExit(ctx, d.child(leader)); err != nil {
		return err
	}

	// 4. The last leader works a little, then everyone still running stops.
	if err := d.pause(ctx, lastTerm); err != nil {
		return err
	}
	for _, c := range d.children {
		if !c.exited {
			d.say("SIGTERM to %s's process group", c.name)
			d.signal(c, syscall.SIGTERM)
		}
	}
	for _, c := range d.children {
		if err := d.awaitExit(ctx, c); err != nil {
			return err
		}
	}
	// Candidates stopped by SIGTERM must have exited cleanly.
	for _, c := range d.children {
		if c.name != d.res.crashed && (c.exitErr != nil || c.exitLine != "none") {
			d.problem("%s did not exit cleanly: %s, last exit line err=%q", c.name, describeExit(c.exitErr), c.exitLine)
		}
	}
	return nil
}

// orCause prefers the reason ctx ended over err, which it probably caused.
func orCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}
