// Command bench is the benchmark behind "make bench".
//
// It runs against the DynamoDB server named by DYNAMODB_ENDPOINT, which
// "make bench" points at a private DynamoDB Local, and measures in one
// process run:
//
//  1. the raw limit: the AWS SDK alone, a conditional PutItem plus a
//     conditional DeleteItem per cycle, sequential and with 8 goroutines;
//  2. DynamoDB requests per library operation, counted by an SDK
//     middleware;
//  3. lock throughput: acquire+release cycles on distinct keys;
//  4. failover after a crash and after a graceful release;
//  5. one client holding many locks;
//  6. contention: 50 clients on one key, fair and unfair;
//     6b. a queued waiter killed: the delay it causes;
//  7. Go microbenchmarks of the codec and the hot paths (go test -bench);
//  8. a semaphore; 9. sets of keys;
//  10. scheduled jobs on three instances: a slot's lateness when the
//     instance running the job is cut off just before it, and requests
//     per slot.
//
// It prints the environment, then one table section per row, and writes the
// same figures to bench/results.json. BENCH_PROFILE=DIR writes CPU, mutex,
// block and heap profiles of the run to DIR. BENCH_SHORT=1 runs the same rows with
// smaller counts and shorter durations. Targets that are missed are marked
// in the output; they never make the command fail (only an unusable
// environment does).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dynalease/dynalease/dynamodbstore"
)

// scale holds every count and duration that BENCH_SHORT scales down.
type scale struct {
	Short              bool    `json:"short"`
	WarmupS            float64 `json:"warmup_s"`
	ThroughputS        float64 `json:"throughput_duration_s"`
	ThroughputRounds   int     `json:"throughput_rounds"`
	OpReps             int     `json:"requests_per_operation_repetitions"`
	ElectionReps       int     `json:"election_repetitions"`
	ElectionWindowS    float64 `json:"election_window_s"`
	CrashTrials        int     `json:"failover_crash_trials"`
	GracefulTrials     int     `json:"failover_graceful_trials"`
	HoldLocks          int     `json:"hold_locks"`
	HoldHeartbeatS     float64 `json:"hold_heartbeat_period_s"`
	HoldLeaseS         float64 `json:"hold_lease_s"`
	HoldPeriods        int     `json:"hold_periods"`
	ContentionClients  int     `json:"contention_clients"`
	ContentionS        float64 `json:"contention_duration_s"`
	MicroBenchtime     string  `json:"microbench_benchtime"`
	MicroTimeoutS      float64 `json:"microbench_timeout_s"`
	acquireConcurrency int
}

func fullScale() scale {
	return scale{
		WarmupS: 24, ThroughputS: 8, ThroughputRounds: 4, OpReps: 20, ElectionReps: 3, ElectionWindowS: 3,
		CrashTrials: 20, GracefulTrials: 20,
		HoldLocks: 10000, HoldHeartbeatS: 30, HoldLeaseS: 90, HoldPeriods: 2,
		ContentionClients: 50, ContentionS: 60,
		MicroBenchtime: "1s", MicroTimeoutS: 240, acquireConcurrency: 16,
	}
}

func shortScale() scale {
	return scale{
		Short:   true,
		WarmupS: 10, ThroughputS: 3, ThroughputRounds: 3, OpReps: 10, ElectionReps: 2, ElectionWindowS: 1.5,
		CrashTrials: 5, GracefulTrials: 5,
		HoldLocks: 2000, HoldHeartbeatS: 10, HoldLeaseS: 30, HoldPeriods: 2,
		ContentionClients: 50, ContentionS: 10,
		MicroBenchtime: "200ms", MicroTimeoutS: 120, acquireConcurrency: 16,
	}
}

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// bench is one run of the benchmark.
type bench struct {
	sc      scale
	root    string // the module's root directory
	runID   string
	clients *clients
	start   time.Time
	tables  []string
	res     results
}

func main() {
	os.Exit(benchMain())
}

func benchMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	endpoint := os.Getenv("DYNAMODB_ENDPOINT")
	if endpoint == "" {
		fmt.Fprintln(os.Stderr, "bench: DYNAMODB_ENDPOINT is not set; run `make bench`, which starts DynamoDB Local")
		return 2
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	sc := fullScale()
	if short, _ := strconv.ParseBool(os.Getenv("BENCH_SHORT")); short {
		sc = shortScale()
	}
	b := &bench{
		sc:      sc,
		root:    root,
		runID:   strconv.FormatInt(time.Now().UnixMilli()%1e8, 36),
		clients: newClients(endpoint),
		start:   time.Now(),
	}
	b.res.Scale = sc
	b.res.StartedAt = b.start.UTC().Format(time.RFC3339)
	b.res.Environment = b.environment(endpoint)

	stopProfiles, err := startProfiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: profiles:", err)
		return 2
	}
	if err := b.run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if err := stopProfiles(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profiles:", err)
		return 1
	}
	b.res.WallTimeS = round2(time.Since(b.start).Seconds())
	printTable(os.Stdout, &b.res)

	out := filepath.Join(root, "bench", "results.json")
	data, err := json.MarshalIndent(&b.res, "", "  ")
	if err == nil {
		err = os.WriteFile(out, append(data, '\n'), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: writing results:", err)
		return 1
	}
	fmt.Printf("\nwrote %s (wall time %.1f s)\n", out, b.res.WallTimeS)
	return 0
}

// run runs every row. Only an environment problem (no server, no table)
// is an error; a row that fails is reported in its section and in Errors.
func (b *bench) run(ctx context.Context) error {
	defer b.dropTables()
	if err := b.warmUp(ctx); err != nil {
		return err
	}
	printHeader(os.Stdout, &b.res)
	rows := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"1 raw limit and 3 lock throughput (interleaved)", b.rowRawAndThroughput},
		{"2 requests per operation", b.rowRequests},
		{"4 failover", b.rowFailover},
		{"5 holding many locks", b.rowHold},
		{"6 contention", b.rowContention},
		{"6b queued waiter killed", b.rowKilledWaiter},
		{"8 semaphore", b.rowSemaphore},
		{"9 sets", b.rowSets},
		{"10 jobs", b.rowJobs},
		{"11 read-write", b.rowReadWrite},
		{"12 priority", b.rowPriority},
		{"7 microbenchmarks", b.rowMicro},
	}
	only := strings.Fields(strings.ReplaceAll(os.Getenv("BENCH_ROWS"), ",", " "))
	for _, r := range rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(only) > 0 && !slices.ContainsFunc(only, func(n string) bool { return strings.HasPrefix(r.name, n+" ") }) {
			continue
		}
		b.progress("row %s", r.name)
		if err := r.fn(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.res.Errors = append(b.res.Errors, fmt.Sprintf("row %s: %v", r.name, err))
			b.progress("row %s FAILED: %v", r.name, err)
		}
	}
	return nil
}

// progress reports what the run is doing, on stderr, so that stdout holds
// only the report.
func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench [%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// table creates a lock table for one row and returns its name.
func (b *bench) table(ctx context.Context, name string) (string, error) {
	t := "bench-" + name + "-" + b.runID
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := dynamodbstore.CreateTable(cctx, b.clients.client(nil, nil), t, dynamodbstore.TableOptions{PollInterval: 50 * time.Millisecond})
	if err != nil {
		return "", fmt.Errorf("creating table %s: %w", t, err)
	}
	b.tables = append(b.tables, t)
	return t, nil
}

// dropTable deletes a table now, best effort.
func (b *bench) dropTable(t string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := b.clients.client(nil, nil)
	if _, err := c.DeleteTable(ctx, deleteTableInput(t)); err == nil {
		for i, name := range b.tables {
			if name == t {
				b.tables = append(b.tables[:i], b.tables[i+1:]...)
				break
			}
		}
	}
}

// dropTables deletes the run's tables, in case the server outlives the run.
func (b *bench) dropTables() {
	for _, t := range append([]string(nil), b.tables...) {
		b.dropTable(t)
	}
}

// moduleRoot finds the directory of this module's go.mod, from the working
// directory upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && containsModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run inside the dynalease module (go.mod of github.com/dynalease/dynalease not found)")
		}
		dir = parent
	}
}

func containsModule(gomod []byte) bool {
	return bytes.Contains(gomod, []byte("module github.com/dynalease/dynalease\n"))
}
