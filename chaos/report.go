package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Report is what a chaos run found. The JSON form is written beside the
// logs; the table is printed.
type Report struct {
	Config     map[string]string `json:"config"`
	Seconds    float64           `json:"seconds"`
	Nemesis    map[string]int    `json:"nemesis"`
	Violations []Violation       `json:"violations"`

	Terms       int `json:"terms"`
	Holds       int `json:"holds"`
	UnfairHolds int `json:"unfairHolds"` // lock holds of workers whose clients wait unfairly
	Samples     int `json:"samples"`
	Committed   int `json:"committed"`

	Writes            int `json:"writes"`
	Acked             int `json:"acked"`
	Refused           int `json:"refused"`
	UnknownApplied    int `json:"unknownApplied"`
	UnknownNotApplied int `json:"unknownNotApplied"`

	Failover    Latencies   `json:"failover"`
	Handover    Latencies   `json:"handover"`
	DeadWaiters DeadWaiters `json:"deadWaiters"`

	// SetHolds: holds of a set of two keys (each also counted, per key, in
	// Holds). PermitHolds: holds of a permit; MaxPermitHolders: the most
	// permit terms in force at one instant (the bound: the run's permits).
	SetHolds         int `json:"setHolds"`
	PermitHolds      int `json:"permitHolds"`
	MaxPermitHolders int `json:"maxPermitHolders"`

	// ReadHolds and WriteHolds: shared and exclusive holds of the
	// read-write key; MaxReaders: the most shared terms in force at one
	// instant.
	ReadHolds  int `json:"readHolds"`
	WriteHolds int `json:"writeHolds"`
	MaxReaders int `json:"maxReaders"`
	// Upgrades: shared holds that became the writer without releasing.
	Upgrades int `json:"upgrades"`

	// Preemptions: terms that stepped down for a live candidate of higher
	// priority; HandOvers: terms that handed over on request
	// (Elector.HandOver). Both counted from the leaders' own ends.
	Preemptions int `json:"preemptions"`
	HandOvers   int `json:"handOvers"`

	// JobStarts: runs of the scheduled chaos job; JobEarliest: how long
	// before its slot (by the shared clock) the earliest began, in seconds
	// (the offset action sets wall clocks up to 3 s ahead);
	// JobSlotsNeverStarted: slots within the run that no worker started.
	JobStarts            int     `json:"jobStarts"`
	JobEarliest          float64 `json:"jobEarliest"`
	JobSlotsNeverStarted int     `json:"jobSlotsNeverStarted"`

	Crashes int           `json:"crashes"`
	Panics  int           `json:"panics"`
	Workers []WorkerStats `json:"workers"`
}

// Latencies summarises liveness measurements, in seconds.
type Latencies struct {
	Values    []float64 `json:"values"`
	Bound     float64   `json:"bound"`
	OverBound int       `json:"overBound"`
	Never     int       `json:"never"` // no new term before the run ended
}

func (l *Latencies) add(v float64) { l.Values = append(l.Values, v) }

func (l Latencies) String() string {
	if len(l.Values) == 0 {
		return fmt.Sprintf("none measured (never: %d)", l.Never)
	}
	s := slices.Clone(l.Values)
	slices.Sort(s)
	return fmt.Sprintf("%d: median %.3f s, max %.3f s (bound %.3f s; over it: %d; never: %d)",
		len(s), s[len(s)/2], s[len(s)-1], l.Bound, l.OverBound, l.Never)
}

// WorkerStats is one worker process's health.
type WorkerStats struct {
	Name          string  `json:"name"`
	Exit          string  `json:"exit"`
	Panicked      bool    `json:"panicked"`
	MaxGoroutines int     `json:"maxGoroutines"`
	MaxHeapMB     float64 `json:"maxHeapMB"`
}

// count returns the number of violations of check.
func (r *Report) count(check string) int {
	n := 0
	for _, v := range r.Violations {
		if v.Check == check {
			n++
		}
	}
	return n
}

// Safe reports whether no safety check (1–4, 7, 8) failed.
func (r *Report) Safe() bool { return len(r.Violations) == 0 }

// print writes the table, then the first violations with what happened
// around them.
func (r *Report) print(w io.Writer) {
	row := func(what string, v any) { fmt.Fprintf(w, "| %s | %v |\n", what, v) }
	fmt.Fprintf(w, "\n| check | result |\n|---|---|\n")
	row("run", fmt.Sprintf("%.0f s; %s", r.Seconds, configLine(r.Config)))
	row("nemesis actions", nemesisLine(r.Nemesis))
	row("1. overlapping leadership or holds (terms, and samples inside another's term)", r.count("overlap"))
	row("2. stale guarded writes committed", r.count("stale"))
	row("3. acknowledged writes lost, refused writes applied, writes applied twice", r.count("writes"))
	row("   guarded writes: acknowledged / refused / unknown (applied, not applied)",
		fmt.Sprintf("%d / %d / %d (%d, %d)", r.Acked, r.Refused, r.UnknownApplied+r.UnknownNotApplied, r.UnknownApplied, r.UnknownNotApplied))
	row("4. terms without a token, or tokens that fall", r.count("tokens"))
	row("   terms / lock holds / belief samples / committed writes", fmt.Sprintf("%d / %d / %d / %d", r.Terms, r.Holds, r.Samples, r.Committed))
	row("   lock holds by fair / unfair waiters (a set's counted per key)", fmt.Sprintf("%d / %d", r.Holds-r.UnfairHolds, r.UnfairHolds))
	row("   holds of sets of two keys", r.SetHolds)
	row("7. more permit holders at once than permits", r.count("permits"))
	row("   permit holds / the most holders at once", fmt.Sprintf("%d / %d (permits: %s)", r.PermitHolds, r.MaxPermitHolders, r.Config["permits"]))
	row("9. read-write key: a writer holding with readers, a reader's token below a finished writer's, a writer's not above a finished reader's", r.count("rw"))
	row("   shared holds / exclusive holds (upgrades among them) / the most readers at once", fmt.Sprintf("%d / %d (%d) / %d", r.ReadHolds, r.WriteHolds, r.Upgrades, r.MaxReaders))
	row("8. scheduled job: slots started twice, or after a later slot", r.count("job"))
	row("   job runs / the earliest before its slot (wall clocks up to 3 s ahead) / slots no worker started", fmt.Sprintf("%d / %.3f s / %d", r.JobStarts, r.JobEarliest, r.JobSlotsNeverStarted))
	row("   terms ended for a higher-priority candidate / by HandOver (priorities 0, 1, 2 by slot)", fmt.Sprintf("%d / %d", r.Preemptions, r.HandOvers))
	row("5. failover after a fault on the leader, from its last confirmed send", r.Failover)
	row("   graceful handover (SIGTERM), from the end of the term", r.Handover)
	row("   a lock waiter killed in its queue: once its turn came, the others' wait, and the lock handed to the dead, to the next hold", r.DeadWaiters)
	maxG, maxH := 0, 0.0
	for _, ws := range r.Workers {
		maxG, maxH = max(maxG, ws.MaxGoroutines), max(maxH, ws.MaxHeapMB)
	}
	row("6. worker processes / crashes / panics", fmt.Sprintf("%d / %d / %d", len(r.Workers), r.Crashes, r.Panics))
	row("   goroutines / heap, the most of any worker", fmt.Sprintf("%d / %.1f MB", maxG, maxH))
	if r.Safe() {
		fmt.Fprintf(w, "\nsafety: 0 violations\n")
		return
	}
	fmt.Fprintf(w, "\nsafety: %d VIOLATIONS\n", len(r.Violations))
	for i, v := range r.Violations {
		if i == 10 {
			fmt.Fprintf(w, "... and %d more (results.json has them all)\n", len(r.Violations)-10)
			break
		}
		fmt.Fprintf(w, "\n[%s] %s\n%s", v.Check, v.What, v.Detail)
	}
}

func configLine(c map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(c) {
		parts = append(parts, k+" "+c[k])
	}
	return strings.Join(parts, ", ")
}

func nemesisLine(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
