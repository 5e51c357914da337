package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease/dynamodbstore"
)

// runConfig is one chaos run.
type runConfig struct {
	endpoint   string
	dir        string // logs and results
	bin        string // the worker binary: this program
	duration   time.Duration
	seed       uint64
	workers    int
	unfair     int // workers (the last slots) whose lock clients wait unfairly
	keys       int
	permits    int  // the semaphore's permits (0: no permit loop)
	rw         bool // the workers also read and write the key "rw" (rwLoop)
	lease      time.Duration
	renew      time.Duration
	retry      time.Duration
	lockLease  time.Duration
	lockMargin time.Duration // 0: the lock client's default
	actions    []string      // the nemesis's repertoire; all when empty
	drift      float64       // ρ: the drift action runs a clock at 1+ρ or 1/(1+ρ)
	broken     string        // a deliberately broken variant for every worker (broken.go), or ""
	jobEvery   time.Duration // the chaos job's interval (0: no schedule workers)
	quiet      bool          // no progress lines
}

func (c *runConfig) flags(fs *flag.FlagSet) {
	minutes := 10.0
	if v, err := strconv.ParseFloat(os.Getenv("CHAOS_MINUTES"), 64); err == nil && v > 0 {
		minutes = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("CHAOS_SEED"), 10, 64); err == nil {
		seed = v
	}
	fs.DurationVar(&c.duration, "duration", time.Duration(minutes*float64(time.Minute)), "how long the nemesis runs (CHAOS_MINUTES)")
	fs.Uint64Var(&c.seed, "seed", seed, "seed of the nemesis and the workers (CHAOS_SEED)")
	fs.StringVar(&c.dir, "dir", "", "directory for the logs and results (a new temporary one when empty)")
	fs.IntVar(&c.workers, "workers", 5, "worker processes")
	fs.IntVar(&c.unfair, "unfair-workers", 1, "workers, the last slots, whose lock clients wait unfairly (lock.Config.Unfair); the others wait fairly, the default")
	fs.IntVar(&c.keys, "keys", 3, "lock keys the workers contend for, one at a time or two as a set")
	fs.IntVar(&c.permits, "permits", 2, "permits of the semaphore the workers also contend for (0: none)")
	fs.BoolVar(&c.rw, "rw", true, "the workers also take the key rw shared (four times in five) or exclusively")
	fs.DurationVar(&c.lease, "lease", 2*time.Second, "election LeaseDuration")
	fs.DurationVar(&c.renew, "renew", 1500*time.Millisecond, "election RenewDeadline")
	fs.DurationVar(&c.retry, "retry", 200*time.Millisecond, "election RetryPeriod")
	fs.DurationVar(&c.lockLease, "lock-lease", 0, "lock lease (LeaseDuration when zero)")
	fs.DurationVar(&c.lockMargin, "lock-margin", 0, "lock safety margin (the client's default, a tenth of the lock lease, when zero)")
	fs.Float64Var(&c.drift, "drift", DocumentedDrift, "clock-rate drift ρ of the drift action: rates 1+ρ and 1/(1+ρ)")
	fs.StringVar(&c.broken, "broken", "", "run a deliberately broken variant (guard, term, set, permit, ledger, rw) to show the checker catches it")
	fs.DurationVar(&c.jobEvery, "job-every", time.Second, "the scheduled chaos job's interval between slots (0: no schedule workers)")
	fs.Func("actions", "comma-separated nemesis actions (all when empty): "+strings.Join(allActions, ","), func(s string) error {
		for _, a := range strings.Split(s, ",") {
			if !knownAction(a) {
				return fmt.Errorf("unknown action %q", a)
			}
			c.actions = append(c.actions, a)
		}
		return nil
	})
}

// DocumentedDrift is the clock-rate drift ρ that the library's smallest
// accepted margins allow (rvnlease.MinMargin, for election and lock:
// 1%): LeaseDuration > RenewDeadline·(1+ρ)² holds for ρ up to √1.01 − 1.
// Real clocks drift about 1e-4.
const DocumentedDrift = 0.0049

// instance is one worker process; a restarted worker is a new instance,
// whether or not it keeps its identity.
type instance struct {
	name       string // identity#num
	num        int    // among all the run's instances, from 1
	id         string
	slot       int
	cmd        *exec.Cmd
	events     string
	stderr     string
	rateFile   string // the rate of its clock, for the drift action
	offsetFile string // its wall clock's offset, for the offset action
	done       chan struct{}
	exit       error
	killed     bool // the nemesis killed it: its exit is expected
	unfair     bool // its lock client waits unfairly
}

type controller struct {
	cfg     runConfig
	ddb     *dynamodb.Client
	store   *dynamodbstore.Store // the lock table, read as the library decodes it
	locks   string
	fences  string
	data    string
	proxies []*proxy
	nem     *eventLog
	rnd     *rand.Rand

	mu        sync.Mutex
	current   []*instance // by slot
	all       []*instance
	instances int
	drifts    int // drift actions so far: they alternate fast and slow
	offsets   int // offset actions so far: they take the offsets in turn

	background sync.WaitGroup // actions that go on behind the nemesis (drift)
}

func newDDB(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:                          "us-east-1",
		BaseEndpoint:                    aws.String(endpoint),
		Credentials:                     credentials.NewStaticCredentialsProvider("chaos", "chaos", ""),
		DisableValidateResponseChecksum: true, // DynamoDB Local only
	})
}

// run starts the tables, proxies and workers, lets the nemesis loose for
// the duration, stops everything and checks the logs and tables.
func run(ctx context.Context, cfg runConfig) (*Report, error) {
	if cfg.endpoint == "" {
		return nil, errors.New("DYNAMODB_ENDPOINT is not set (make chaos starts DynamoDB Local)")
	}
	if cfg.lockLease == 0 {
		cfg.lockLease = cfg.lease
	}
	if len(cfg.actions) == 0 {
		cfg.actions = allActions
	}
	if cfg.drift == 0 {
		cfg.drift = DocumentedDrift
	}
	if err := checkBroken(cfg.broken); err != nil {
		return nil, err
	}
	if cfg.unfair < 0 || cfg.unfair > cfg.workers {
		return nil, fmt.Errorf("unfair workers %d: want 0 to %d", cfg.unfair, cfg.workers)
	}
	if cfg.dir == "" {
		d, err := os.MkdirTemp("", "dynalease-chaos-")
		if err != nil {
			return nil, err
		}
		cfg.dir = d
	}
	c := &controller{cfg: cfg, ddb: newDDB(cfg.endpoint), rnd: rand.New(rand.NewPCG(cfg.seed, 1))}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	c.locks, c.fences, c.data = "chaos-locks-"+suffix, "chaos-fences-"+suffix, "chaos-data-"+suffix
	for _, t := range []struct {
		name string
		pk   string
	}{{c.locks, ""}, {c.fences, ""}, {c.data, "id"}} {
		if err := dynamodbstore.CreateTable(ctx, c.ddb, t.name, dynamodbstore.TableOptions{PartitionKeyAttribute: t.pk}); err != nil {
			return nil, fmt.Errorf("creating table %s: %w", t.name, err)
		}
	}
	defer c.dropTables()
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c.ddb, Table: c.locks})
	if err != nil {
		return nil, err
	}
	c.store = store
	rtt, err := c.roundTrip(ctx)
	if err != nil {
		return nil, err
	}
	nem, err := openEventLog(filepath.Join(cfg.dir, "nemesis.jsonl"))
	if err != nil {
		return nil, err
	}
	c.nem = nem
	defer nem.close()
	for i := 0; i < cfg.workers; i++ {
		p, err := startProxy(cfg.endpoint, cfg.seed+uint64(i))
		if err != nil {
			return nil, err
		}
		defer p.close()
		c.proxies = append(c.proxies, p)
	}
	c.current = make([]*instance, cfg.workers)
	for slot := range cfg.workers {
		if err := c.start(slot, fmt.Sprintf("w%d", slot+1)); err != nil {
			return nil, err
		}
	}
	c.logf("%d workers up (%d waiting unfairly); nemesis for %v (seed %d, lease %v / renew %v / retry %v), logs in %s",
		cfg.workers, cfg.unfair, cfg.duration, cfg.seed, cfg.lease, cfg.renew, cfg.retry, cfg.dir)

	// The nemesis starts once someone leads.
	for deadline := time.Now().Add(10 * cfg.lease); time.Now().Before(deadline) && c.byOwner(ctx, "leader") == nil; {
		sleepCtx(ctx, cfg.retry)
	}
	began := mono()
	c.nemesis(ctx, time.Now().Add(cfg.duration))
	c.background.Wait()
	ended := mono()
	c.stopAll()

	hist, err := c.readHistories(context.Background())
	if err != nil {
		return nil, err
	}
	r, err := c.check(hist, rtt, began, ended)
	if err != nil {
		return nil, err
	}
	r.Config = map[string]string{
		"dir": cfg.dir, "seed": strconv.FormatUint(cfg.seed, 10), "workers": strconv.Itoa(cfg.workers),
		"lease": cfg.lease.String(), "renew": cfg.renew.String(), "retry": cfg.retry.String(),
		"lock lease": cfg.lockLease.String(), "lock margin": cfg.lockMargin.String(), "round trip": rtt.String(),
		"drift": strconv.FormatFloat(cfg.drift, 'g', -1, 64), "unfair workers": strconv.Itoa(cfg.unfair), "permits": strconv.Itoa(cfg.permits), "read-write": strconv.FormatBool(cfg.rw), "job every": cfg.jobEvery.String(),
	}
	return r, nil
}

// start launches a worker instance in slot with identity id.
func (c *controller) start(slot int, id string) error {
	c.mu.Lock()
	c.instances++
	n := c.instances
	c.mu.Unlock()
	name := fmt.Sprintf("%s#%d", id, n)
	in := &instance{name: name, num: n, id: id, slot: slot, done: make(chan struct{}), unfair: c.unfairSlot(slot),
		events:     filepath.Join(c.cfg.dir, fmt.Sprintf("worker-%02d-%s.jsonl", n, id)),
		stderr:     filepath.Join(c.cfg.dir, fmt.Sprintf("worker-%02d-%s.stderr", n, id)),
		rateFile:   filepath.Join(c.cfg.dir, fmt.Sprintf("worker-%02d-%s.rate", n, id)),
		offsetFile: filepath.Join(c.cfg.dir, fmt.Sprintf("worker-%02d-%s.offset", n, id))}
	errf, err := os.Create(in.stderr)
	if err != nil {
		return err
	}
	in.cmd = exec.Command(c.cfg.bin, "worker",
		"-id", id, "-instance", strconv.Itoa(n), "-endpoint", c.proxies[slot].URL(), "-events", in.events,
		"-locks", c.locks, "-fences", c.fences, "-data", c.data,
		"-lease", c.cfg.lease.String(), "-renew", c.cfg.renew.String(), "-retry", c.cfg.retry.String(),
		"-lock-lease", c.cfg.lockLease.String(), "-lock-margin", c.cfg.lockMargin.String(), "-keys", strconv.Itoa(c.cfg.keys),
		"-pause-for", c.pauseFor().String(), "-seed", strconv.FormatUint(c.cfg.seed+uint64(n), 10),
		"-rate-file", in.rateFile, "-broken", c.cfg.broken, "-unfair="+strconv.FormatBool(in.unfair),
		"-permits", strconv.Itoa(c.cfg.permits), "-rw="+strconv.FormatBool(c.cfg.rw), "-job-every", c.cfg.jobEvery.String(), "-offset-file", in.offsetFile,
		"-priority", strconv.Itoa(slot%3))
	in.cmd.Stderr = errf
	in.cmd.Stdout = errf
	if err := in.cmd.Start(); err != nil {
		errf.Close()
		return fmt.Errorf("starting worker %s: %w", name, err)
	}
	go func() {
		in.exit = in.cmd.Wait()
		errf.Close()
		close(in.done)
	}()
	c.mu.Lock()
	c.current[slot] = in
	c.all = append(c.all, in)
	c.mu.Unlock()
	c.nem.log(Event{Ev: "nemesis", Action: "start", Worker: name, Pid: in.cmd.Process.Pid})
	// Ready once it has logged its start, which it does after installing
	// its signal handlers.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := os.Stat(in.events); err == nil && st.Size() > 0 {
			return nil
		}
		select {
		case <-in.done:
			return nil // the checker reports the exit
		default:
		}
	}
	c.logf("worker %s did not log its start within 30 s", name)
	return nil
}

// unfairSlot reports whether the worker in slot waits unfairly for locks:
// the last cfg.unfair slots do, whoever runs in them after a restart.
func (c *controller) unfairSlot(slot int) bool { return slot >= c.cfg.workers-c.cfg.unfair }

// stopAll ends every worker gracefully (SIGTERM, as on a rollout), killing
// what does not exit within two leases.
func (c *controller) stopAll() {
	c.mu.Lock()
	cur := append([]*instance(nil), c.current...)
	c.mu.Unlock()
	for _, in := range cur {
		_ = in.cmd.Process.Signal(syscall.SIGCONT)
		_ = in.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.proxies {
		p.set(fault{})
	}
	for _, in := range cur {
		select {
		case <-in.done:
		case <-time.After(2*c.cfg.lease + 5*time.Second):
			_ = in.cmd.Process.Kill()
			<-in.done
			c.nem.log(Event{Ev: "nemesis", Action: "stuck-at-exit", Worker: in.name})
		}
	}
}

// dropTables deletes the run's tables, best effort: the logs keep what
// the checker read.
func (c *controller) dropTables() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range []string{c.locks, c.fences, c.data} {
		_, _ = c.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
	}
}

// roundTrip measures the median time of a strongly consistent read.
func (c *controller) roundTrip(ctx context.Context) (time.Duration, error) {
	var ds []time.Duration
	for range 7 {
		start := time.Now()
		if _, err := c.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.locks), ConsistentRead: aws.Bool(true),
			Key: map[string]typesAV{"key": strAV("leader")}}); err != nil {
			return 0, fmt.Errorf("measuring a round trip: %w", err)
		}
		ds = append(ds, time.Since(start))
	}
	return median(ds), nil
}

func (c *controller) logf(format string, args ...any) {
	if !c.cfg.quiet {
		fmt.Fprintf(os.Stderr, "chaos: "+format+"\n", args...)
	}
}
