package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// workerConfig is what the controller tells a worker process.
type workerConfig struct {
	id, endpoint, events           string
	instance                       int
	locks, fences, data            string
	lease, renew, retry, lockLease time.Duration
	lockMargin                     time.Duration // 0: the lock client's default
	keys                           int
	pauseFor                       time.Duration
	seed                           uint64
	rateFile                       string
	broken                         string // a deliberately broken variant (broken.go), or ""
	unfair                         bool   // the lock client waits unfairly (lock.Config.Unfair)
	permits                        int    // the semaphore's permits (0: no permit loop)
	rw                             bool   // also take the key rw shared or exclusively (rwLoop)
	jobEvery                       time.Duration
	offsetFile                     string // this worker's wall-clock offset, read on SIGUSR2
	priority                       int64  // the Elector's priority (the controller gives slot mod 3)
}

func (c *workerConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.id, "id", "", "identity (owner name) of this worker")
	fs.IntVar(&c.instance, "instance", 0, "number of this process among all the run's workers")
	fs.StringVar(&c.endpoint, "endpoint", "", "DynamoDB endpoint (the worker's proxy)")
	fs.StringVar(&c.events, "events", "", "event log to append to")
	fs.StringVar(&c.locks, "locks", "", "lock table")
	fs.StringVar(&c.fences, "fences", "", "fence table")
	fs.StringVar(&c.data, "data", "", "data table (partition key id)")
	fs.DurationVar(&c.lease, "lease", 2*time.Second, "election LeaseDuration")
	fs.DurationVar(&c.renew, "renew", 1500*time.Millisecond, "election RenewDeadline")
	fs.DurationVar(&c.retry, "retry", 200*time.Millisecond, "election RetryPeriod")
	fs.DurationVar(&c.lockLease, "lock-lease", 2*time.Second, "lock lease")
	fs.DurationVar(&c.lockMargin, "lock-margin", 0, "lock safety margin (the client's default, a tenth of the lease, when zero)")
	fs.IntVar(&c.keys, "keys", 3, "lock keys contended for")
	fs.DurationVar(&c.pauseFor, "pause-for", 3*time.Second, "how long SIGUSR1 holds the next guarded write before it leaves")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed")
	fs.StringVar(&c.rateFile, "rate-file", "", "file holding the rate of this worker's clock, read on SIGUSR2")
	fs.StringVar(&c.broken, "broken", "", "a deliberately broken variant: guard or term (make test proves the checker catches each)")
	fs.BoolVar(&c.unfair, "unfair", false, "the lock client waits unfairly (lock.Config.Unfair); fair waiting is the default")
	fs.IntVar(&c.permits, "permits", 2, "permits of the semaphore the workers also contend for (0: none)")
	fs.BoolVar(&c.rw, "rw", false, "also take the key rw shared (four times in five) or exclusively")
	fs.DurationVar(&c.jobEvery, "job-every", time.Second, "the chaos job's interval between slots (0: no schedule worker)")
	fs.StringVar(&c.offsetFile, "offset-file", "", "file holding this worker's wall-clock offset, read on SIGUSR2")
	fs.Int64Var(&c.priority, "priority", 0, "the Elector's priority: higher leads")
}

// The roles' history items in the data table: every guarded write appends
// "token/instance/seq" to the list of its role's item and counts it.
func historyID(role string) string { return "hist-" + role }

// worker is one process: an Elector on the shared election and a lock
// client contending for a few keys. While it believes it leads or holds,
// it samples that belief and makes guarded writes.
type worker struct {
	cfg     workerConfig
	log     *eventLog
	ddb     *dynamodb.Client
	clk     *driftClock
	rnd     *rand.Rand
	rndMu   sync.Mutex
	seq     atomic.Int64
	pausing atomic.Bool  // the next guarded write waits cfg.pauseFor before it leaves
	offset  atomic.Int64 // the schedule's wall-clock offset, in nanoseconds

	// guards makes the guarded writes of the worker's terms and locks
	// (Store.Writes): the lock table's store, without fencing.
	guards *dynamodbstore.Store

	mu   sync.Mutex
	held map[string]*lock.Lock // role → lock held when the worker stops
}

func runWorker(args []string) error {
	// First of all: the nemesis may signal as soon as the "start" event is
	// logged, and SIGUSR1's default action would kill the process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2)
	var cfg workerConfig
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	cfg.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkBroken(cfg.broken); err != nil {
		return err
	}
	log, err := openEventLog(cfg.events)
	if err != nil {
		return err
	}
	defer log.close()
	w := &worker{cfg: cfg, log: log, rnd: rand.New(rand.NewPCG(cfg.seed, uint64(os.Getpid()))),
		held: map[string]*lock.Lock{}, clk: newDriftClock()}
	w.ddb = dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(cfg.endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("chaos", "chaos", ""),
		HTTPClient:   &http.Client{Transport: &pausingTransport{w: w, next: http.DefaultTransport}},
		// DynamoDB Local sends no checksum on error responses; emulator only.
		DisableValidateResponseChecksum: true,
	}, func(o *dynamodb.Options) {
		if cfg.broken == brokenGuard {
			admitAnyLockCheck(cfg.locks)(o)
		}
	})

	if w.guards, err = dynamodbstore.New(dynamodbstore.Config{Client: w.ddb, Table: cfg.locks}); err != nil {
		return err
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for s := range sigs {
			if s == syscall.SIGUSR1 {
				w.pausing.Store(true)
				w.log.log(Event{Ev: "pause-armed", Worker: cfg.id})
				continue
			}
			if s == syscall.SIGUSR2 {
				w.drift()
				w.readOffset()
				continue
			}
			w.log.log(Event{Ev: "terminating", Worker: cfg.id})
			stop()
		}
	}()
	mode := "fair"
	if cfg.unfair {
		mode = "unfair"
	}
	w.log.log(Event{Ev: "start", Worker: cfg.id, Pid: os.Getpid(), Detail: mode})

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Go(func() { errs <- w.elect(ctx) })
	wg.Go(func() { errs <- w.lockLoop(ctx) })
	wg.Go(func() { errs <- w.jobLoop(ctx) })
	wg.Go(func() { w.stats(ctx) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	w.log.log(Event{Ev: "exit", Worker: cfg.id})
	return nil
}

// drift sets the rate of the library's clock to the one in the rate file
// (the nemesis's "drift" action writes it, then sends SIGUSR2).
func (w *worker) drift() {
	b, err := os.ReadFile(w.cfg.rateFile)
	if os.IsNotExist(err) {
		return // no rate set yet (an offset action sent the signal)
	}
	rate, perr := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || perr != nil || rate <= 0 {
		w.log.log(Event{Ev: "drift-refused", Worker: w.cfg.id, Detail: fmt.Sprint(err, perr)})
		return
	}
	w.clk.setRate(rate)
	w.log.log(Event{Ev: "drift", Worker: w.cfg.id, Detail: strconv.FormatFloat(rate, 'g', -1, 64)})
}

func (w *worker) intn(n int) int {
	w.rndMu.Lock()
	defer w.rndMu.Unlock()
	return w.rnd.IntN(n)
}

// pausingTransport holds the next guarded write (a TransactWriteItems whose
// context carries its sequence number; not a set's own writes), once armed by SIGUSR1,
// for the configured pause, after the library's own checks and before the
// request leaves, and then sends it whatever its context says: a process
// stalled in the middle of a guarded write.
//
// It holds only a first attempt (the SDK's Amz-Sdk-Request header says
// attempt=1). A retry may repeat an attempt that landed unseen (a dropped
// answer), and DynamoDB acknowledges such a repeat from its idempotency
// token without evaluating the condition again: held past a takeover, it
// would be acknowledged, and the checker, timing the write from the held
// send, would count a commit of the old term as a stale one.
type pausingTransport struct {
	w    *worker
	next http.RoundTripper
}

// seqKey carries a guarded write's sequence number down to the transport.
type seqKey struct{}

func (p *pausingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	seq, guarded := req.Context().Value(seqKey{}).(int64)
	if guarded && req.Header.Get("X-Amz-Target") == "DynamoDB_20120810.TransactWriteItems" && firstAttempt(req) && p.w.pausing.CompareAndSwap(true, false) {
		p.w.log.log(Event{Ev: "paused-write", Worker: p.w.cfg.id, Seq: seq, Detail: p.w.cfg.pauseFor.String()})
		time.Sleep(p.w.cfg.pauseFor)
		req = req.WithContext(context.WithoutCancel(req.Context()))
		// The write leaves now: the checker counts this as its send time.
		p.w.log.log(Event{Ev: "paused-write-sent", Worker: p.w.cfg.id, Seq: seq})
	}
	return p.next.RoundTrip(req)
}

// firstAttempt reports whether req is the SDK's first attempt of its
// operation (no Amz-Sdk-Request header counts as one).
func firstAttempt(req *http.Request) bool {
	h := req.Header.Get("Amz-Sdk-Request")
	return h == "" || h == "attempt=1" || strings.HasPrefix(h, "attempt=1;")
}

// elect stands for the election until ctx ends.
func (w *worker) elect(ctx context.Context) error {
	store, err := w.electionStore()
	if err != nil {
		return err
	}

	var e *election.Elector
	e, err = election.New(election.Config{
		Store:           store,
		Name:            "leader",
		Identity:        w.cfg.id,
		LeaseDuration:   w.cfg.lease,
		RenewDeadline:   w.cfg.renew,
		RetryPeriod:     w.cfg.retry,
		ReleaseOnCancel: true,
		Fencing:         true,
		Priority:        w.cfg.priority,
		Stand:           true,
		Clock:           w.clk,
		Logger:          termLogger(w, "elect"),
		Callbacks: election.Callbacks{
			OnStartedLeading: func(lctx context.Context) { w.lead(lctx, e) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		_ = e.Run(ctx)
	}
	return nil
}

// lead is the leader's work: samples of IsLeader and a guarded write about
// every 100 ms, until the term ends. One term in two hands the lease over
// to the live candidate of highest priority after 0.5 to 2 s.
func (w *worker) lead(ctx context.Context, e *election.Elector) {
	tok, _ := election.TokenFromContext(ctx)
	stopSampling := w.sample(ctx, "elect", tok, e.ValidUntil)
	defer stopSampling()
	if w.intn(2) == 0 {
		after := time.Duration(500+w.intn(1500)) * time.Millisecond
		go func() {
			sleepCtx(ctx, after)
			if ctx.Err() == nil {
				_ = e.HandOver(context.WithoutCancel(ctx), "") // refused without a live candidate: the term goes on
			}
		}()
	}
	for ctx.Err() == nil {
		w.guardedWrite(ctx, "elect", tok, func(ctx context.Context, item types.TransactWriteItem) error {
			return e.Guard(ctx, w.guards.Writes(item))
		})
		sleepCtx(ctx, time.Duration(80+w.intn(40))*time.Millisecond)
	}
}

// lockLoop runs the lock client's work until ctx ends: one key at a time
// (or, one time in three, a set of two keys) and, beside it, a permit of
// the semaphore (permitLoop). The client waits fairly (the default: it
// joins the row's queue and is handed the lock) unless the worker is one
// of the run's unfair ones; both kinds contend for the same keys.
func (w *worker) lockLoop(ctx context.Context) error {
	margin := w.cfg.lockMargin
	if margin == 0 {
		margin = w.cfg.lockLease / 10 // the client's default
	}
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: w.ddb, Table: w.cfg.locks, FenceTable: w.cfg.fences})
	if err != nil {
		return err
	}
	c, err := lock.New(lock.Config{Store: store, Identity: w.cfg.id, Clock: w.clk, LeaseDuration: w.cfg.lockLease, SafetyMargin: margin, HeartbeatPeriod: w.cfg.lockLease / 6, RequestTimeout: w.cfg.lockLease / 4, RefreshPeriod: w.cfg.retry, Fencing: true, Unfair: w.cfg.unfair})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), w.cfg.lockLease)
		defer cancel()
		w.mu.Lock()
		for role, l := range w.held {
			w.log.log(Event{Ev: "end", Worker: w.cfg.id, Role: role, Token: l.Token(), Detail: "close"})
		}
		w.mu.Unlock()
		_ = c.Close(cctx)
	}()
	validity := w.cfg.lockLease - margin
	var wg sync.WaitGroup
	if w.cfg.permits > 0 {
		wg.Go(func() { w.permitLoop(ctx, c, validity) })
	}
	if w.cfg.rw {
		wg.Go(func() { w.rwLoop(ctx, c, validity) })
	}
	defer wg.Wait()
	for ctx.Err() == nil {
		i := w.intn(w.cfg.keys)
		key := "k" + strconv.Itoa(i)
		if w.cfg.keys >= 2 && w.intn(3) == 0 {
			other := "k" + strconv.Itoa((i+1+w.intn(w.cfg.keys-1))%w.cfg.keys)
			w.holdSet(ctx, c, []string{key, other}, validity)
			continue
		}
		role := "lock:" + key
		w.hold(ctx, []string{role}, validity, func(actx context.Context) (*lock.Lock, error) { return c.Acquire(actx, key) })
	}
	return nil
}

// holdSet takes keys as one set (AcquireSet), and holds it as hold does,
// each key its own role: the checker's rules for one key then hold for
// every member of a set, against single-key holds and other sets alike.
// Under the "set" broken variant it takes the first key alone, as a set
// taken member by member that stopped after its first would be held.
func (w *worker) holdSet(ctx context.Context, c *lock.Client, keys []string, validity time.Duration) {
	roles := make([]string, len(keys))
	for i, k := range keys {
		roles[i] = "lock:" + k
	}
	w.hold(ctx, roles, validity, func(actx context.Context) (*lock.Lock, error) {
		if w.cfg.broken == brokenSet {
			return c.Acquire(actx, slices.Min(keys))
		}
		return c.AcquireSet(actx, keys)
	})
}

// permitLoop takes a permit of the semaphore "sem" of cfg.permits permits
// (one more under the "permit" broken variant), holds it as hold does in
// the role of its slot, and again, until ctx ends.
func (w *worker) permitLoop(ctx context.Context, c *lock.Client, validity time.Duration) {
	n := w.cfg.permits
	if w.cfg.broken == brokenPermit {
		n++
	}
	for ctx.Err() == nil {
		w.hold(ctx, nil, validity, func(actx context.Context) (*lock.Lock, error) { return c.AcquirePermit(actx, "sem", n) })
	}
}

// rwLoop takes the key "rw" shared four times in five (role read:rw) and
// exclusively otherwise (role write:rw), holds it as hold does, and again,
// until ctx ends. One read in four is upgradeable and, held, upgrades to
// the writer (Lock.Upgrade), which it then holds as a writer. Under the
// "rw" broken variant a writer takes a shared hold: it then holds with
// readers.
func (w *worker) rwLoop(ctx context.Context, c *lock.Client, validity time.Duration) {
	for ctx.Err() == nil {
		if w.intn(5) > 0 && w.intn(4) == 0 {
			w.holdThen(ctx, []string{"read:rw"}, validity,
				func(actx context.Context) (*lock.Lock, error) {
					return c.AcquireShared(actx, "rw", lock.WithUpgradeable())
				},
				func(ctx context.Context, l *lock.Lock) bool { return w.upgrade(ctx, l, validity) })
			continue
		}
		if w.intn(5) > 0 {
			w.hold(ctx, []string{"read:rw"}, validity, func(actx context.Context) (*lock.Lock, error) { return c.AcquireShared(actx, "rw") })
			continue
		}
		w.hold(ctx, []string{"write:rw"}, validity, func(actx context.Context) (*lock.Lock, error) {
			if w.cfg.broken == brokenRW {
				return c.AcquireShared(actx, "rw")
			}
			return c.Acquire(actx, "rw")
		})
	}
}

// upgrade upgrades l, an upgradeable shared hold of rw, to the writer,
// ending its read term as the upgrade returns, and holds the writer as
// hold does. It reports whether it ended the read term (the upgrade
// landed); otherwise l is still the caller's.
func (w *worker) upgrade(ctx context.Context, l *lock.Lock, validity time.Duration) bool {
	upgraded := false
	w.hold(ctx, []string{"write:rw"}, validity, func(actx context.Context) (*lock.Lock, error) {
		up, err := l.Upgrade(actx)
		if err == nil {
			w.log.log(Event{Ev: "end", Worker: w.cfg.id, Role: "read:rw", Token: l.Token(), Detail: "upgraded"})
			upgraded = true
		}
		return up, err
	})
	return upgraded
}

// readWrite reports whether role is a read-write key's (read: or write:),
// whose rows are never deleted: a reader's token is the row's, which a
// deletion would forget.
func readWrite(role string) bool {
	return strings.HasPrefix(role, "read:") || strings.HasPrefix(role, "write:")
}

// hold acquires a lock with acquire, logs a term for each of roles (nil:
// the role of the slot it took, "permit:" and its key), holds it a while
// with samples of its validity and guarded writes, each to the history of
// one of the roles, and releases it. The wait is logged (the checker tells
// a waiter killed in a row's queue from one killed while holding).
func (w *worker) hold(ctx context.Context, roles []string, validity time.Duration, acquire func(context.Context) (*lock.Lock, error)) {
	w.holdThen(ctx, roles, validity, acquire, nil)
}

// holdThen is hold, with then, when set, run once the lock has been held
// its while and is still held: then reports whether it ended the roles'
// terms itself (an upgrade), or left the lock to be released as hold
// releases it.
func (w *worker) holdThen(ctx context.Context, roles []string, validity time.Duration, acquire func(context.Context) (*lock.Lock, error), then func(context.Context, *lock.Lock) bool) {
	waitRole := "permit:sem"
	if roles != nil {
		waitRole = strings.Join(roles, "+")
	}
	actx, cancel := context.WithTimeout(ctx, 2*w.cfg.lockLease)
	w.log.log(Event{Ev: "acquire", Worker: w.cfg.id, Role: waitRole, Phase: "begin"})
	l, err := acquire(actx)
	cancel()
	w.log.log(Event{Ev: "acquire", Worker: w.cfg.id, Role: waitRole, Phase: "end", Err: errString(err)})
	if err != nil {
		sleepCtx(ctx, time.Duration(w.intn(200))*time.Millisecond)
		return
	}
	if roles == nil {
		roles = []string{"permit:" + l.Key()}
	}
	until := l.ValidUntil()
	if until.IsZero() {
		// Ended already (confirmed late, or this process stalled):
		// never held as far as the application could tell.
		_ = l.Release(ctx)
		return
	}
	for _, role := range roles {
		w.log.log(Event{Ev: "term", Worker: w.cfg.id, Role: role, Token: l.Token(), Start: w.clk.shared(until.Add(-validity)), Until: w.clk.shared(until)})
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stops := make([]func(), len(roles))
	for i, role := range roles {
		stops[i] = w.sample(hctx, role, l.Token(), l.ValidUntil)
	}
	holdFor := time.Duration(300+w.intn(1700)) * time.Millisecond
	deadline := time.Now().Add(holdFor)
	for time.Now().Before(deadline) && hctx.Err() == nil && !ended(l) {
		role := roles[w.intn(len(roles))]
		if l.Shared() {
			// A shared hold guards no writes: it holds and samples.
			sleepCtx(hctx, time.Duration(80+w.intn(40))*time.Millisecond)
			continue
		}
		w.guardedWrite(hctx, role, l.Token(), func(ctx context.Context, item types.TransactWriteItem) error {
			return l.Guard(ctx, w.guards.Writes(item))
		})
		sleepCtx(hctx, time.Duration(80+w.intn(40))*time.Millisecond)
	}
	for _, stop := range stops {
		stop()
	}
	if then != nil && !ended(l) && ctx.Err() == nil && then(ctx, l) {
		return
	}
	switch {
	case ended(l):
		for _, role := range roles {
			w.log.log(Event{Ev: "end", Worker: w.cfg.id, Role: role, Token: l.Token(), Detail: fmt.Sprint(l.Err())})
		}
	case ctx.Err() == nil:
		// The application stops acting on the lock when it calls
		// Release; the lock ends before the release write leaves.
		del := w.intn(4) == 0 && !readWrite(roles[0])
		how := "release"
		if del {
			how = "release, deleting the row" // no hand-over: the queue goes with the row
		}
		for _, role := range roles {
			w.log.log(Event{Ev: "end", Worker: w.cfg.id, Role: role, Token: l.Token(), Detail: how})
		}
		rctx, rcancel := context.WithTimeout(context.Background(), w.cfg.lockLease)
		_ = l.Release(rctx, lock.ReleaseDelete(del))
		rcancel()
	default:
		w.mu.Lock()
		for _, role := range roles {
			w.held[role] = l // Close releases it; its end is logged then
		}
		w.mu.Unlock()
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func ended(l *lock.Lock) bool {
	select {
	case <-l.Done():
		return true
	default:
		return false
	}
}

// sample logs, every ~20 ms until ctx ends or the returned function is
// called, each reading of validUntil (Elector.ValidUntil, Lock.ValidUntil:
// the zero time unless the term or lock is in force at that instant, as
// IsLeader and IsHeld read it) that found it in force, with the shared
// clock read just before and just after it, and the validity it returned.
func (w *worker) sample(ctx context.Context, role string, tok int64, validUntil func() time.Time) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sctx.Err() == nil {
			b := mono()
			v := validUntil()
			a := mono()
			if !v.IsZero() {
				w.log.log(Event{Ev: "sample", Worker: w.cfg.id, Role: role, Token: tok, Before: b, T: a, Until: w.clk.shared(v)})
			}
			sleepCtx(sctx, 20*time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}

// guardedWrite appends this write to its role's history item, guarded by
// the lease, and logs it before it is sent and after, with its outcome.
func (w *worker) guardedWrite(ctx context.Context, role string, tok int64, guard func(context.Context, types.TransactWriteItem) error) {
	seq := w.seq.Add(1)
	entry := fmt.Sprintf("%d/%d/%d", tok, w.cfg.instance, seq)
	item := types.TransactWriteItem{Update: &types.Update{
		TableName:        aws.String(w.cfg.data),
		Key:              map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: historyID(role)}},
		UpdateExpression: aws.String("SET n = if_not_exists(n, :zero) + :one, hist = list_append(if_not_exists(hist, :empty), :e)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero":  &types.AttributeValueMemberN{Value: "0"},
			":one":   &types.AttributeValueMemberN{Value: "1"},
			":empty": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			":e":     &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: entry}}},
		},
	}}
	w.log.log(Event{Ev: "write", Worker: w.cfg.id, Role: role, Token: tok, Seq: seq, Phase: "send"})
	err := guard(context.WithValue(ctx, seqKey{}, seq), item)
	out := classify(err)
	ev := Event{Ev: "write", Worker: w.cfg.id, Role: role, Token: tok, Seq: seq, Phase: "done", Outcome: out}
	if err != nil {
		ev.Err = err.Error()
	}
	w.log.log(ev)
}

// classify names the outcome of a guarded write from its error.
func classify(err error) string {
	var ice *dynamodbstore.ItemConditionError
	switch {
	case err == nil:
		return outcomeAck
	case errors.Is(err, resourcelock.ErrGuardLost), errors.Is(err, resourcelock.ErrContention):
		return outcomeRefusedServer
	case errors.As(err, &ice):
		return outcomeCondition
	case errors.Is(err, dynalease.ErrLost), errors.Is(err, lock.ErrNotHeld), errors.Is(err, lock.ErrNotHeld),
		errors.Is(err, dynalease.ErrLost):
		return outcomeRefusedLocal
	}
	return outcomeUnknown
}

// stats logs goroutines and heap every 5 s.
func (w *worker) stats(ctx context.Context) {
	for ctx.Err() == nil {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		w.log.log(Event{Ev: "stats", Worker: w.cfg.id, Goroutines: runtime.NumGoroutine(), HeapBytes: m.HeapAlloc})
		sleepCtx(ctx, 5*time.Second)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
