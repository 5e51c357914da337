// Command bench is the k8s module's part of "make bench": client-go's
// leader elector over clientgo.Lock against dynalease's election.Elector,
// on one DynamoDB row each, when the leader's renewals hang.
//
// In each trial a leader and a standby run (lease 2 s, renew deadline
// 1.5 s, retry 200 ms). Then the leader's next renewal lands at once but
// its answer comes back only after a delay (1.4 s: under the renew
// deadline, so the elector takes it as a success), and every renewal
// after it hangs until its context ends without landing: a leader whose
// writes stop getting through just after one that did (its reads are not
// faulted). Neither elector releases on cancel. The trial measures by how much
// the standby's start came before the leader's stop (its
// OnStoppedLeading): an overlap is a time when both believed they led.
//
// client-go counts a term from when a renewal returned, so the slow answer
// moves the leader's belief 1.4 s later than the write the standby
// watches; dynalease counts from the send. It prints a table and writes
// k8s/bench/results.json. BENCH_SHORT=1 runs 3 trials each, not 15.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/k8s/clientgo"
	"github.com/dynalease/dynalease/resourcelock"
)

const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1500 * time.Millisecond
	retryPeriod   = 200 * time.Millisecond
	slowAnswer    = 1400 * time.Millisecond
	settle        = 2 * time.Second // the leader leads this long before the fault
	trialLimit    = 30 * time.Second
)

// result is one elector's trials.
type result struct {
	Elector     string    `json:"elector"`
	Trials      int       `json:"trials"`
	Overlapping int       `json:"overlapping"`
	OverlapsS   []float64 `json:"overlaps_s"` // positive: both led that long; negative: the gap
	FailoverS   []float64 `json:"failover_s"` // from the slow write's send to the standby's start
}

func main() {
	endpoint := os.Getenv("DYNAMODB_ENDPOINT")
	if endpoint == "" {
		fmt.Fprintln(os.Stderr, "bench: DYNAMODB_ENDPOINT is not set (make bench starts DynamoDB Local)")
		os.Exit(2)
	}
	klog.SetLogger(logr.Discard()) // client-go's elector logs every failed renewal
	trials := 15
	if os.Getenv("BENCH_SHORT") != "" {
		trials = 3
	}
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("bench", "bench", ""), DisableValidateResponseChecksum: true})
	ctx := context.Background()
	table := fmt.Sprintf("k8s-bench-%d", time.Now().UnixNano())
	if err := dynamodbstore.CreateTable(ctx, db, table, dynamodbstore.TableOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	defer db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: table})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	var results []result
	for _, kind := range []string{"client-go LeaderElector over clientgo.Lock", "dynalease election.Elector"} {
		r := result{Elector: kind}
		for i := range trials {
			name := fmt.Sprintf("trial-%d-%d", len(results), i)
			overlap, failover, err := trial(store, name, kind != "dynalease election.Elector")
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s, trial %d: %v\n", kind, i, err)
				os.Exit(2)
			}
			r.Trials++
			r.OverlapsS = append(r.OverlapsS, overlap.Seconds())
			r.FailoverS = append(r.FailoverS, failover.Seconds())
			if overlap > 0 {
				r.Overlapping++
			}
		}
		results = append(results, r)
	}
	fmt.Printf("\n## Leader election when the leader's renewals hang (lease %v, renew deadline %v, retry %v; a renewal answered %v late, then none)\n\n",
		leaseDuration, renewDeadline, retryPeriod, slowAnswer)
	fmt.Printf("| elector | trials | both led at once | longest overlap | failover median (from the slow write's send) |\n|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Printf("| %s | %d | %d | %s | %.2f s |\n", r.Elector, r.Trials, r.Overlapping, longest(r.OverlapsS), median(r.FailoverS))
	}
	fmt.Printf("\n(%s, %d CPUs)\n", runtime.Version(), runtime.NumCPU())
	b, _ := json.MarshalIndent(map[string]any{"leader_election_hung_renewals": results}, "", "  ")
	out := filepath.Join("bench", "results.json")
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
}

func longest(v []float64) string {
	m := slices.Max(v)
	if m <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.2f s", m)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// faultyStore passes everything to the store until armed; then the
// leader's next Update lands but answers slowAnswer late, and every Update
// after it hangs until its context ends, without landing.
type faultyStore struct {
	rows.Store
	armed  atomic.Bool
	mu     sync.Mutex
	slowed bool
	sentAt time.Time // when the slow write was sent
}

func (s *faultyStore) Update(ctx context.Context, key resourcelock.Key, expect resourcelock.Precondition, rec resourcelock.Record, opts rows.WriteOptions) (rows.Item, error) {
	if !s.armed.Load() {
		return s.Store.Update(ctx, key, expect, rec, opts)
	}
	s.mu.Lock()
	first := !s.slowed
	s.slowed = true
	if first {
		s.sentAt = time.Now()
	}
	s.mu.Unlock()
	if !first {
		<-ctx.Done()
		return rows.Item{}, ctx.Err()
	}
	it, err := s.Store.Update(context.WithoutCancel(ctx), key, expect, rec, opts)
	time.Sleep(slowAnswer) // the answer is slow; the write has landed
	return it, err
}

// leader is one elector's callbacks' times.
type leader struct {
	mu               sync.Mutex
	started, ended   time.Time
	startedC, endedC chan struct{}
}

func newLeader() *leader { return &leader{startedC: make(chan struct{}), endedC: make(chan struct{})} }

func (l *leader) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started.IsZero() {
		l.started = time.Now()
		close(l.startedC)
	}
}

func (l *leader) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started.IsZero() && l.ended.IsZero() {
		l.ended = time.Now()
		close(l.endedC)
	}
}

// trial runs a leader (whose store is faulty) and then a standby on the
// row name, arms the fault, and returns the overlap (the leader's stop
// minus the standby's start) and the failover from the slow write's send.
func trial(store resourcelock.Store, name string, clientGo bool) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), trialLimit)
	defer cancel()
	faulty := &faultyStore{Store: rows.MustOpen(store)}
	first, second := newLeader(), newLeader()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	run := func(s resourcelock.Store, id string, l *leader) error {
		if clientGo {
			lk, err := clientgo.New(clientgo.Config{Store: s, Name: name, Identity: id})
			if err != nil {
				return err
			}
			le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{Lock: lk,
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
				Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { l.start() }, OnStoppedLeading: l.stop}})
			if err != nil {
				return err
			}
			wg.Go(func() { le.Run(ctx) })
			return nil
		}
		e, err := election.New(election.Config{Store: s, Name: name, Identity: id, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			Callbacks: election.Callbacks{OnStartedLeading: func(c context.Context) { l.start(); <-c.Done() }, OnStoppedLeading: l.stop}})
		if err != nil {
			return err
		}
		wg.Go(func() { _ = e.Run(ctx) })
		return nil
	}
	if err := run(rows.Sealed(faulty), "leader", first); err != nil {
		return 0, 0, err
	}
	select {
	case <-first.startedC:
	case <-ctx.Done():
		return 0, 0, fmt.Errorf("the first candidate never led")
	}
	if err := run(store, "standby", second); err != nil {
		return 0, 0, err
	}
	time.Sleep(settle)
	faulty.armed.Store(true)
	for _, c := range []chan struct{}{first.endedC, second.startedC} {
		select {
		case <-c:
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("no failover within %v", trialLimit)
		}
	}
	first.mu.Lock()
	second.mu.Lock()
	defer first.mu.Unlock()
	defer second.mu.Unlock()
	faulty.mu.Lock()
	defer faulty.mu.Unlock()
	return first.ended.Sub(second.started), second.started.Sub(faulty.sentAt), nil
}
