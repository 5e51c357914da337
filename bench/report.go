package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// results is everything the run measured; it is also bench/results.json.
type results struct {
	StartedAt            string              `json:"started_at"`
	WallTimeS            float64             `json:"wall_time_s"`
	Scale                scale               `json:"scale"`
	Environment          environment         `json:"environment"`
	RawLimit             []throughput        `json:"raw_limit"`
	RequestsPerOperation []opCount           `json:"requests_per_operation"`
	LockThroughput       []throughput        `json:"lock_throughput"`
	Failover             *failoverResult     `json:"failover"`
	HoldManyLocks        *holdResult         `json:"hold_many_locks"`
	Contention           *contentionResult   `json:"contention"`
	ContentionUnfair     *contentionResult   `json:"contention_unfair"`
	KilledWaiter         *killedWaiterResult `json:"queued_waiter_killed"`
	Semaphore            *semaphoreResult    `json:"semaphore"`
	ReadWrite            *readWriteResult    `json:"read_write"`
	Priority             *priorityResult     `json:"leader_priority"`
	Sets                 *setsResult         `json:"sets"`
	Jobs                 *jobsResult         `json:"scheduled_jobs"`
	Microbenchmarks      *microResult        `json:"microbenchmarks"`
	Errors               []string            `json:"errors,omitempty"`
}

// table is a small aligned text table.
type table struct {
	head  []string
	rows  [][]string
	right map[int]bool // right-aligned columns
}

func newTable(head ...string) *table { return &table{head: head, right: map[int]bool{}} }

func (t *table) alignRight(cols ...int) *table {
	for _, c := range cols {
		t.right[c] = true
	}
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) print(w io.Writer) {
	width := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(c))
			}
		}
	}
	line := func(r []string) {
		var sb strings.Builder
		sb.WriteString("  ")
		for i, c := range r {
			if i >= len(width) {
				break
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				sb.WriteString("  ")
			}
			if t.right[i] {
				sb.WriteString(pad + c)
			} else if i < len(r)-1 {
				sb.WriteString(c + pad)
			} else {
				sb.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(sb.String(), " "))
	}
	line(t.head)
	for _, r := range t.rows {
		line(r)
	}
}

// kv prints aligned "name  value" lines.
type kv struct{ rows [][2]string }

func (k *kv) add(name, format string, args ...any) {
	k.rows = append(k.rows, [2]string{name, fmt.Sprintf(format, args...)})
}

func (k *kv) print(w io.Writer) {
	n := 0
	for _, r := range k.rows {
		n = max(n, utf8.RuneCountInString(r[0]))
	}
	for _, r := range k.rows {
		fmt.Fprintf(w, "  %s%s  %s\n", r[0], strings.Repeat(" ", n-utf8.RuneCountInString(r[0])), r[1])
	}
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f3(v float64) string { return fmt.Sprintf("%.3f", v) }
func msStr(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.3f s", v/1000)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// byOp renders per-operation counts as "GetItem 3, UpdateItem 7".
func byOp(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func section(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n", title)
}

// printHeader prints the run's kind and the environment.
func printHeader(w io.Writer, r *results) {
	sc := r.Scale
	if sc.Short {
		fmt.Fprintf(w, "dynalease benchmark: SHORT RUN (BENCH_SHORT=1): the same rows with scaled-down counts and durations\n"+
			"  (%.0f s per throughput measurement, %d+%d failover trials, %d held locks with %.0f s heartbeats, %.0f s contention, -benchtime %s)\n",
			sc.ThroughputS, sc.CrashTrials, sc.GracefulTrials, sc.HoldLocks, sc.HoldHeartbeatS, sc.ContentionS, sc.MicroBenchtime)
	} else {
		fmt.Fprintf(w, "dynalease benchmark: full run (BENCH_SHORT=1 for a shorter one)\n")
	}
	e := r.Environment
	section(w, "Environment")
	var k kv
	k.add("CPU", "%s: %d logical CPUs (GOMAXPROCS %d), shared with DynamoDB Local", e.CPUModel, e.NumCPU, e.GOMAXPROCS)
	k.add("Go", "%s %s", e.GoVersion, e.Platform)
	k.add("DynamoDB Local", "%s (%s)", e.DDBLocalVersion, e.DDBLocalSource)
	k.add("Java", "%s", e.Java)
	var sdk []string
	for _, m := range []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-sdk-go-v2/service/dynamodb", "github.com/aws/smithy-go"} {
		if v, ok := e.SDKModules[m]; ok {
			sdk = append(sdk, strings.TrimPrefix(m, "github.com/aws/")+" "+v)
		}
	}
	k.add("AWS SDK", "%s", strings.Join(sdk, ", "))
	k.add("Endpoint", "%s", e.Endpoint)
	k.add("Requests", "%s", e.RequestCounting)
	k.add("HTTP", "%s", e.HTTPPool)
	k.add("Warm-up", "%.0f s of 2 s rounds (raw, lock, lock with delete; 8 goroutines), requests/s per round: %s",
		sc.WarmupS, joinF(e.WarmupRequestsPerS))
	k.add("Round trip", "consistent GetItem p50 %.2f ms, p99 %.2f ms; failing conditional UpdateItem p50 %.2f ms (sequential, after %d warm-up requests)",
		e.RTTGetItemP50Ms, e.RTTGetItemP99Ms, e.RTTUpdateItemP50M, e.WarmupRequests)
	k.print(w)
}

// printTable prints one section per row.
func printTable(w io.Writer, r *results) {
	printRaw(w, r)
	printRequests(w, r)
	printThroughput(w, r)
	printFailover(w, r)
	printHold(w, r)
	printContention(w, r)
	printKilledWaiter(w, r)
	printSemaphore(w, r)
	printReadWrite(w, r)
	printPriority(w, r)
	printSets(w, r)
	printJobs(w, r)
	printMicro(w, r)
	if len(r.Errors) > 0 {
		section(w, "Errors")
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

func printRaw(w io.Writer, r *results) {
	section(w, fmt.Sprintf("1. Raw limit: the AWS SDK alone, conditional PutItem + conditional DeleteItem per cycle (%.0f s each, in %d rounds interleaved with row 3's)",
		r.Scale.ThroughputS, r.Scale.ThroughputRounds))
	t := newTable("mode", "cycles/s", "requests/s", "cycle p50", "cycle p99", "client CPU/request", "cycles", "errors").alignRight(1, 2, 3, 4, 5, 6, 7)
	for _, tp := range r.RawLimit {
		t.add(tp.Mode, f1(tp.CyclesPerS), f1(tp.RequestsPerS), msStr(tp.CycleP50Ms), msStr(tp.CycleP99Ms), usStr(tp.CPUPerRequestUs), fmt.Sprint(tp.Cycles), errs(tp))
	}
	t.print(w)
	fmt.Fprintln(w, "  client CPU: the bench process's user + system time (getrusage) over the rounds, per DynamoDB request; the emulator's is not in it")
}

func usStr(us float64) string { return fmt.Sprintf("%.1f µs", us) }

func errs(tp throughput) string {
	if tp.Errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", tp.Errors, tp.FirstError)
}

func printRequests(w io.Writer, r *results) {
	section(w, "2. DynamoDB requests per operation (HTTP attempts, counted by an SDK middleware; target 1 for acquire, renew, release)")
	t := newTable("operation", "samples", "requests/op", "min", "max", "target", "by DynamoDB operation (total)").alignRight(1, 2, 3, 4)
	for _, oc := range r.RequestsPerOperation {
		target := "-"
		if oc.MeetsTarget != nil {
			target = fmt.Sprintf("%.0f ok", oc.Target)
			if !*oc.MeetsTarget {
				target = fmt.Sprintf("%.0f MISSED", oc.Target)
			}
		}
		t.add(oc.Operation, fmt.Sprint(oc.Samples), f3(oc.RequestsPerOp), fmt.Sprint(oc.MinRequests), fmt.Sprint(oc.MaxRequests), target, byOp(oc.ByOp))
	}
	t.print(w)
}

func printThroughput(w io.Writer, r *results) {
	section(w, fmt.Sprintf("3. Lock throughput: Acquire + Release cycles on distinct keys, one lock.Client (%.0f s each, in %d rounds interleaved with row 1's)",
		r.Scale.ThroughputS, r.Scale.ThroughputRounds))
	t := newTable("mode", "cycles/s", "requests/s", "requests/cycle", "cycle p50", "cycle p99", "ratio to raw, per request", "client CPU/request", "CPU ÷ raw's", "errors").alignRight(1, 2, 3, 4, 5, 6, 7, 8, 9)
	for _, tp := range r.LockThroughput {
		t.add(tp.Mode, f1(tp.CyclesPerS), f1(tp.RequestsPerS), f3(tp.RequestsPerCycle), msStr(tp.CycleP50Ms), msStr(tp.CycleP99Ms), f3(tp.RatioToRawPerRequest),
			usStr(tp.CPUPerRequestUs), f3(tp.CPURatioToRawPerRequest), errs(tp))
	}
	t.print(w)
	fmt.Fprintln(w, "  ratio: this row's DynamoDB requests/s ÷ row 1's requests/s with the same number of goroutines")
	fmt.Fprintln(w, "  CPU ÷ raw's: this row's client CPU per request ÷ row 1's, same goroutines (goal at most 1.2)")
}

func printFailover(w io.Writer, r *results) {
	f := r.Failover
	if f == nil {
		return
	}
	section(w, fmt.Sprintf("4. Failover: lease %v, renew deadline %v, retry %v; one leader and two standbys, a fresh lease per trial",
		time.Duration(f.LeaseS*float64(time.Second)), time.Duration(f.RenewDeadlineS*float64(time.Second)), time.Duration(f.RetryPeriodS*float64(time.Second))))
	t := newTable("exit", "trials", "median", "max", "min", "bound (RTT p50)", "bound (RTT p99)", "within bound (p99)", "old term end → new start, min").alignRight(1, 2, 3, 4, 5, 6, 7, 8)
	for _, k := range []struct {
		name string
		k    *failoverKind
	}{{"crash", &f.Crash}, {"graceful", &f.Graceful}} {
		t.add(k.name, fmt.Sprintf("%d/%d", k.k.Completed, k.k.Trials), msStr(k.k.MedianMs), msStr(k.k.MaxMs), msStr(k.k.MinMs),
			msStr(k.k.BoundRTTP50Ms), msStr(k.k.BoundRTTP99Ms), fmt.Sprintf("%d/%d", k.k.WithinBoundP99, k.k.Completed), msStr(k.k.MinGapMs))
	}
	t.print(w)
	var k kv
	k.add("crash", "%s; bound %s", f.Crash.Measured, f.Crash.BoundFormula)
	k.add("graceful", "%s; bound %s", f.Graceful.Measured, f.Graceful.BoundFormula)
	k.add("round trip", "p50 %.2f ms, p99 %.2f ms over %d requests of the standbys; 1.2 × RetryPeriod is the longest jittered poll", f.RTTP50Ms, f.RTTP99Ms, f.RTTSamples)
	k.add("standby reads", "%.2f per standby and RetryPeriod while the leader lived (reads placed just after the leader's expected renewals, plus one at a random time)", f.StandbyReadsPerPeriod)
	k.add("crash, ms", "%s", joinF(f.Crash.PerTrial))
	k.add("graceful, ms", "%s", joinF(f.Graceful.PerTrial))
	k.add("from event, ms", "crash: %s; graceful (from the cancel): %s", joinF(f.Crash.FromEventMs), joinF(f.Graceful.FromEventMs))
	k.add("overlaps", "crash %d, graceful %d (a new leader started before the old leader's context was cancelled)", f.Crash.OverlappingTerms, f.Graceful.OverlappingTerms)
	for _, ft := range append(append([]string(nil), f.Crash.FailedTrials...), f.Graceful.FailedTrials...) {
		k.add("FAILED", "%s", ft)
	}
	k.print(w)
}

func joinF(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = f0(x)
	}
	return strings.Join(parts, " ")
}

func printHold(w io.Writer, r *results) {
	h := r.HoldManyLocks
	if h == nil {
		return
	}
	section(w, fmt.Sprintf("5. Holding many locks: one lock.Client, %d locks, lease %.0f s, heartbeat every %.0f s, %d heartbeat workers",
		h.Locks, h.LeaseS, h.HeartbeatPeriodS, h.HeartbeatConcurrency))
	var k kv
	k.add("acquire", "%d locks in %.1f s with %d goroutines: %.0f locks/s, %.0f requests/s, ratio to raw (8 goroutines) %.3f, %d errors",
		h.Locks, h.AcquireS, h.AcquireGoroutines, h.AcquirePerS, h.AcquireRequestsPerS, h.AcquireRatioToRaw, h.AcquireErrors)
	var per []string
	for i, n := range h.HeartbeatsPerPeriod {
		per = append(per, fmt.Sprintf("period %d: %d", i+1, n))
	}
	k.add("heartbeats", "%s (expected %d per period)", strings.Join(per, ", "), h.Locks)
	lost := "OK"
	if h.LocksLost != 0 {
		lost = fmt.Sprintf("MISSED %v", h.LostReasons)
	}
	k.add("locks lost", "%d (must be 0) %s", h.LocksLost, lost)
	k.add("validity left", "min %.1f s over all locks at the end (validity is lease − lease/10 = %.0f s after each heartbeat's send)", h.MinValidityLeftS, h.LeaseS*0.9)
	k.add("requests in hold", "%s over %.1f s; errors: %s", byOp(h.RequestsDuringHold), h.HoldS, byOp(h.ErrorsDuringHold))
	k.add("goroutines", "%d before, max %d while holding, max %d over the row (incl. %d acquiring goroutines)", h.GoroutinesBefore, h.GoroutinesMaxHold, h.GoroutinesMax, h.AcquireGoroutines)
	k.add("heap", "%.0f bytes per held lock after acquisition, %.0f after %d periods (live heap after GC, whole process)", h.HeapBytesPerLock, h.HeapBytesPerLockAfterHold, h.Periods)
	k.add("heap, warm", "%.0f bytes per held lock after acquisition, %.0f after %d periods, from a warmed client (its connections open: the client's fixed costs left out)", h.HeapBytesPerLockWarm, h.HeapBytesPerLockAfterHoldWarm, h.Periods)
	k.add("release", "%d locks in %.1f s, %d errors", h.Locks, h.ReleaseS, h.ReleaseErrors)
	k.print(w)
}

func printContention(w io.Writer, r *results) {
	for _, c := range []*contentionResult{r.Contention, r.ContentionUnfair} {
		if c == nil {
			continue
		}
		mode := "fair waiting (the default)"
		if !c.Fair {
			mode = "fairness off (Config.Unfair)"
		}
		section(w, fmt.Sprintf("6. Contention, %s: %d clients on one key for %.0f s, each holding %.0f ms then releasing; lease %.0f s, refresh %.0f ms",
			mode, c.Clients, c.DurationS, c.HoldMs, c.LeaseS, c.RefreshMs))
		var k kv
		k.add("acquisitions", "%d (%.1f/s); per client min %d, max %d; %d (%.0f%%) by the previous holder, right after its own Release",
			c.Acquisitions, c.AcquisitionsPerS, c.MinPerClient, c.MaxPerClient, c.SameHolderAgain, 100*ratio(float64(c.SameHolderAgain), float64(c.Acquisitions)))
		k.add("requests", "%.0f/s (%s), %.1f per acquisition, ratio to raw (8 goroutines) %.3f", c.RequestsPerS, byOp(c.RequestsByOp), c.RequestsPerAcquisition, c.RatioToRawPerRequest)
		k.add("request errors", "%s", byOp(c.RequestErrors))
		k.add("after the run", "%s (waiters giving up at the end, not counted above)", byOp(c.RequestsAfterRun))
		k.add("wait", "p50 %s, p99 %s, longest %s; longest unfinished at the end %s", msStr(c.WaitP50Ms), msStr(c.WaitP99Ms), msStr(c.LongestWaitMs), msStr(c.LongestOpenWaitMs))
		k.add("hand-over", "p50 %s, p99 %s (a Release's return to another client's Acquire's return)", msStr(c.HandOverP50Ms), msStr(c.HandOverP99Ms))
		k.add("never acquired", "%d of %d clients", c.NeverAcquired, c.Clients)
		k.add("overlapping holds", "%d (in-process check: Acquire returned before the previous holder called Release)", c.Overlaps)
		k.add("errors", "Acquire %d, Release %d %s", c.AcquireErrors, c.ReleaseErrors, c.FirstError)
		k.add("settings", "heartbeat %.0f ms (never due in a hold), request timeout %.0f ms (lock's default for this lease)", c.HeartbeatMs, c.RequestTimeoutMs)
		k.print(w)
	}
}

func printKilledWaiter(w io.Writer, r *results) {
	k := r.KilledWaiter
	if k == nil {
		return
	}
	section(w, fmt.Sprintf("6b. A queued waiter killed: the release hands the lock to a dead waiter (lease %.0f s); the next waiter takes over (refresh %.0f ms)", k.DeadLeaseS, k.RefreshMs))
	var kv kv
	kv.add("delay", "beyond the dead waiter's lease: median %s, max %s over %d trials (bound: about one refresh period)", msStr(k.MedianMs), msStr(k.MaxMs), len(k.DelayMs))
	if len(k.Failed) > 0 {
		kv.add("failed trials", "%v", k.Failed)
	}
	kv.print(w)
}

func printMicro(w io.Writer, r *results) {
	m := r.Microbenchmarks
	if m == nil {
		return
	}
	section(w, fmt.Sprintf("7. Go microbenchmarks: %s (%.0f s)", m.Command, m.DurationS))
	t := newTable("package", "benchmark", "ns/op", "B/op", "allocs/op").alignRight(2, 3, 4)
	for _, b := range m.Benchmarks {
		t.add(b.Package, b.Name, f1(b.NsPerOp), fmt.Sprint(b.BytesPerOp), fmt.Sprint(b.AllocsPerOp))
	}
	t.print(w)
	if m.Error != "" {
		fmt.Fprintf(w, "  FAILED: %s\n%s\n", m.Error, m.Output)
	}
}
