package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// entry is one committed guarded write, in commit order within its role:
// its token, and the worker instance and sequence number that name it.
type entry struct {
	token     int64
	inst, seq int64
}

// readHistories reads every role's committed guarded writes from the data
// table, each role's in the order DynamoDB applied them.
func (c *controller) readHistories(ctx context.Context) (map[string][]entry, error) {
	out := map[string][]entry{}
	p := dynamodb.NewScanPaginator(c.ddb, &dynamodb.ScanInput{TableName: aws.String(c.data), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the histories: %w", err)
		}
		for _, it := range page.Items {
			id, _ := it["id"].(*types.AttributeValueMemberS)
			list, _ := it["hist"].(*types.AttributeValueMemberL)
			if id == nil || list == nil || !strings.HasPrefix(id.Value, "hist-") {
				continue
			}
			role := strings.TrimPrefix(id.Value, "hist-")
			for _, v := range list.Value {
				s, _ := v.(*types.AttributeValueMemberS)
				if s == nil {
					return nil, fmt.Errorf("history of %s holds %T", role, v)
				}
				parts := strings.Split(s.Value, "/")
				if len(parts) != 3 {
					return nil, fmt.Errorf("history of %s holds %q", role, s.Value)
				}
				var e entry
				var errs [3]error
				e.token, errs[0] = strconv.ParseInt(parts[0], 10, 64)
				e.inst, errs[1] = strconv.ParseInt(parts[1], 10, 64)
				e.seq, errs[2] = strconv.ParseInt(parts[2], 10, 64)
				for _, err := range errs {
					if err != nil {
						return nil, fmt.Errorf("history of %s holds %q: %w", role, s.Value, err)
					}
				}
				out[role] = append(out[role], e)
			}
		}
	}
	return out, nil
}

// term is one period of belief of one process in one role: from the
// confirmation of its acquiring write (Begin) to the end of its validity
// or the moment it stopped (End). Start is the acquiring write's send time.
type term struct {
	proc         string
	role         string
	token        int64
	start, begin int64
	end          int64
	// valid is the term's last validity bound (its last confirmed send
	// plus the renew deadline), which an early end does not move.
	valid  int64
	ended  bool   // an end event closed it
	how    string // the end event's detail ("release", ...)
	unfair bool   // the process's lock client waits unfairly
}

// Violation is one breach of a guarantee, with the times around it.
type Violation struct {
	Check  string `json:"check"`
	What   string `json:"what"`
	At     int64  `json:"at"`
	Detail string `json:"detail,omitempty"`
}

// checker holds what the logs and the tables say.
type checker struct {
	cfg     runConfig
	procs   []*procLog
	nemesis []Event
	hist    map[string][]entry
	rtt     time.Duration
	began   int64
	ended   int64
	r       *Report
}

type procLog struct {
	in     *instance
	events []Event
	terms  []*term
}

// key names one of p's guarded writes, as its history entries do.
func (p *procLog) key(seq int64) [2]int64 { return [2]int64{int64(p.in.num), seq} }

func (c *controller) check(hist map[string][]entry, rtt time.Duration, began, ended int64) (*Report, error) {
	ch := &checker{cfg: c.cfg, hist: hist, rtt: rtt, began: began, ended: ended, r: &Report{}}
	nem, err := readEvents(filepath.Join(c.cfg.dir, "nemesis.jsonl"))
	if err != nil {
		return nil, err
	}
	ch.nemesis = nem
	for _, in := range c.all {
		evs, err := readEvents(in.events)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		p := &procLog{in: in, events: evs}
		p.terms = buildTerms(in.name, evs)
		for _, t := range p.terms {
			t.unfair = in.unfair
		}
		ch.procs = append(ch.procs, p)
	}
	ch.run()
	return ch.r, nil
}

// buildTerms reconstructs a process's terms from its events.
func buildTerms(proc string, evs []Event) []*term {
	var out []*term
	open := map[string]*term{}
	for _, e := range evs {
		switch e.Ev {
		case "term":
			t := &term{proc: proc, role: e.Role, token: e.Token, start: e.Start, begin: e.T, end: e.Until, valid: e.Until}
			open[e.Role] = t
			out = append(out, t)
		case "extend", "sample":
			if t := open[e.Role]; t != nil && e.Until > t.end {
				t.end, t.valid = e.Until, e.Until
			}
		case "end":
			if t := open[e.Role]; t != nil {
				if e.T < t.end {
					t.end = e.T
				}
				t.ended, t.how = true, e.Detail
				delete(open, e.Role)
			}
		}
	}
	return out
}

func (ch *checker) violation(check, what string, at int64) {
	ch.r.Violations = append(ch.r.Violations, Violation{Check: check, What: what, At: at, Detail: ch.around(at)})
}

func (ch *checker) run() {
	ch.overlaps()
	ch.stale()
	ch.writes()
	ch.tokens()
	ch.liveness()
	ch.stepDowns()
	ch.deadWaiters()
	ch.permits()
	ch.readWrite()
	ch.sets()
	ch.jobs()
	ch.processes()
	ch.r.Nemesis = map[string]int{}
	for _, e := range ch.nemesis {
		// (The queued-* events are the kill-queued action's observations.)
		if e.Action != "" && !strings.HasSuffix(e.Action, "-heal") && !strings.HasSuffix(e.Action, "-exited") && e.Action != "start" && !strings.HasPrefix(e.Action, "queued-") {
			ch.r.Nemesis[e.Action]++
		}
	}
	ch.r.Seconds = float64(ch.ended-ch.began) / 1e9
}

// termsByRole returns every process's terms of each role, by Begin.
func (ch *checker) termsByRole() map[string][]*term {
	out := map[string][]*term{}
	for _, p := range ch.procs {
		for _, t := range p.terms {
			out[t.role] = append(out[t.role], t)
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b *term) int { return cmp64(a.begin, b.begin) })
	}
	return out
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// overlaps: check 1. Terms of two processes in one role that overlap, and
// samples of a process's belief that lie wholly inside another process's
// term.
func (ch *checker) overlaps() {
	byRole := ch.termsByRole()
	for role, ts := range byRole {
		if strings.HasPrefix(role, "read:") {
			continue // shared holds: check 9
		}
		kind := "leadership"
		if role != "elect" {
			kind = "holds of " + role
		}
		for i, t := range ts {
			for _, u := range ts[i+1:] {
				if u.begin >= t.end {
					break // ts is sorted by begin: none later overlaps t
				}
				if u.proc != t.proc && u.begin < u.end {
					ch.violation("overlap", fmt.Sprintf("overlapping %s: %s (token %d) believed until %s, %s (token %d) from %s",
						kind, t.proc, t.token, ch.at(t.end), u.proc, u.token, ch.at(u.begin)), u.begin)
				}
			}
		}
		if role == "elect" {
			ch.r.Terms += len(ts)
			continue
		}
		ch.r.Holds += len(ts)
		for _, t := range ts {
			if t.unfair {
				ch.r.UnfairHolds++
			}
		}
	}
	for _, p := range ch.procs {
		for _, e := range p.events {
			if e.Ev != "sample" || e.Until <= e.Before || strings.HasPrefix(e.Role, "read:") {
				continue // not in force at any instant of the reading, or shared
			}
			ch.r.Samples++
			for _, t := range byRole[e.Role] {
				if t.begin > e.Before {
					break
				}
				if t.proc != p.in.name && e.T <= t.end {
					ch.violation("overlap", fmt.Sprintf("%s sampled itself holding %s (token %d) between %s and %s, inside the term of %s (token %d, %s to %s)",
						p.in.name, e.Role, e.Token, ch.at(e.Before), ch.at(e.T), t.proc, t.token, ch.at(t.begin), ch.at(t.end)), e.Before)
					break
				}
			}
		}
	}
}

// stale: check 2. A committed write whose token is below one committed
// before it, or that was sent after a later term had been confirmed.
func (ch *checker) stale() {
	sends := ch.sendTimes()
	byRole := ch.termsByRole()
	for role, list := range ch.hist {
		var max int64
		for i, e := range list {
			if e.token < max {
				ch.violation("stale", fmt.Sprintf("%s: write %d/%d (token %d) committed after a write of token %d (position %d)",
					role, e.inst, e.seq, e.token, max, i), sends[[2]int64{e.inst, e.seq}])
			}
			max = maxInt(max, e.token)
			sent, ok := sends[[2]int64{e.inst, e.seq}]
			if !ok {
				continue
			}
			for _, t := range byRole[role] {
				if t.token > e.token && t.begin < sent {
					ch.violation("stale", fmt.Sprintf("%s: write %d/%d (token %d) committed although sent at %s, after the term of %s (token %d) was confirmed at %s",
						role, e.inst, e.seq, e.token, ch.at(sent), t.proc, t.token, ch.at(t.begin)), sent)
					break
				}
			}
		}
		ch.r.Committed += len(list)
	}
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// sendTimes maps (instance, seq) to when the write was sent: logged just
// before Guard, or, for a write the nemesis held in the transport, when
// it was let go.
func (ch *checker) sendTimes() map[[2]int64]int64 {
	out := map[[2]int64]int64{}
	for _, p := range ch.procs {
		for _, e := range p.events {
			if (e.Ev == "write" && e.Phase == "send") || (e.Ev == "paused-write-sent" && e.Seq != 0) {
				out[p.key(e.Seq)] = max(out[p.key(e.Seq)], e.T)
			}
		}
	}
	return out
}

// writes: check 3. Every acknowledged write is in the history, no refused
// write is, none is applied twice; unknown outcomes are counted.
func (ch *checker) writes() {
	applied := map[[2]int64]int{}
	for _, list := range ch.hist {
		for _, e := range list {
			applied[[2]int64{e.inst, e.seq}]++
		}
	}
	for k, n := range applied {
		if n > 1 {
			ch.violation("writes", fmt.Sprintf("write %d/%d applied %d times", k[0], k[1], n), 0)
		}
	}
	known := map[[2]int64]bool{}
	for _, p := range ch.procs {
		done := map[int64]Event{}
		var sent []Event
		for _, e := range p.events {
			if e.Ev != "write" {
				continue
			}
			if e.Phase == "send" {
				sent = append(sent, e)
			} else {
				done[e.Seq] = e
			}
		}
		for _, s := range sent {
			k := p.key(s.Seq)
			known[k] = true
			d, ok := done[s.Seq]
			out := outcomeUnknown
			if ok {
				out = d.Outcome
			}
			ch.r.Writes++
			switch out {
			case outcomeAck:
				ch.r.Acked++
				if applied[k] == 0 {
					ch.violation("writes", fmt.Sprintf("%s: acknowledged write %d/%d (%s, token %d) is not in the history", p.in.name, p.in.num, s.Seq, s.Role, s.Token), d.T)
				}
			case outcomeUnknown:
				if applied[k] > 0 {
					ch.r.UnknownApplied++
				} else {
					ch.r.UnknownNotApplied++
				}
			default:
				ch.r.Refused++
				if applied[k] > 0 {
					ch.violation("writes", fmt.Sprintf("%s: write %d/%d (%s, token %d) reported %s (%s) was applied", p.in.name, p.in.num, s.Seq, s.Role, s.Token, out, d.Err), d.T)
				}
			}
		}
	}
	for k := range applied {
		if !known[k] {
			ch.violation("writes", fmt.Sprintf("write %d/%d is in the history but no worker logged sending it", k[0], k[1]), 0)
		}
	}
}

// tokens: check 4. Every term has a token, and tokens rise in the order
// in which the terms' acquiring writes landed. The checker does not see a
// landing, only that it lies between the write's first send (start: the
// SDK may retry it, and a retry can land after another term came and
// went) and its confirmation (begin). So a pair is out of order for
// certain only when the term with the larger token was confirmed before
// the other's acquiring write was even sent.
func (ch *checker) tokens() {
	for role, ts := range ch.termsByRole() {
		if strings.HasPrefix(role, "read:") {
			continue // readers share one token a hold: check 9
		}
		ts = slices.Clone(ts)
		slices.SortFunc(ts, func(a, b *term) int { return cmp64(a.start, b.start) })
		for i, u := range ts {
			if u.token <= 0 {
				ch.violation("tokens", fmt.Sprintf("%s: the term of %s from %s has no token", role, u.proc, ch.at(u.begin)), u.begin)
			}
			for _, t := range ts[:i] {
				if t.begin < u.start && t.token >= u.token {
					ch.violation("tokens", fmt.Sprintf("%s: the term of %s from %s has token %d, not above %d of %s's term confirmed at %s, before it was sent",
						role, u.proc, ch.at(u.begin), u.token, t.token, t.proc, ch.at(t.begin)), u.begin)
					break
				}
			}
		}
	}
}

// liveness: check 5. After a fault on the leader, how long until a term
// begins again, from the old leader's last confirmed send (bound
// LeaseDuration + 1.2 RetryPeriod + 2 round trips); after a graceful
// handover, from the end of the term (just before the release write; bound
// 1.2 RetryPeriod + 2 round trips). Reported, not asserted.
func (ch *checker) liveness() {
	ts := ch.termsByRole()["elect"]
	failBound := ch.cfg.lease + ch.cfg.retry*12/10 + 2*ch.rtt
	handBound := ch.cfg.retry*12/10 + 2*ch.rtt
	for _, e := range ch.nemesis {
		if e.Ev != "nemesis" {
			continue
		}
		graceful := e.Action == "term"
		switch e.Action {
		case "stop-leader", "pause-write", "kill", "kill-same", "kill-queued", "partition", "term":
		default:
			continue
		}
		// The term in force when the fault began, and the next one.
		var old, next *term
		for _, t := range ts {
			if t.begin <= e.T && e.T < t.end && t.proc == e.Worker {
				old = t
			}
			if old != nil && t != old && t.begin >= old.end {
				next = t
				break
			}
		}
		if old == nil {
			continue // the target was not leading
		}
		m := &ch.r.Failover
		// From the last confirmed send, also when the term ended before
		// its validity did (a step-down under way when the fault came).
		from := old.valid - int64(ch.cfg.renew)
		bound := failBound
		if graceful {
			m = &ch.r.Handover
			from = old.end
			bound = handBound
		}
		m.Bound = bound.Seconds()
		if next == nil {
			m.Never++
			continue
		}
		d := time.Duration(next.start - from)
		m.add(d.Seconds())
		if d > bound {
			m.OverBound++
		}
	}
}

// stepDowns counts the terms that ended by handing the lease over, from
// the reasons the leaders logged: for a candidate of higher priority, or
// on request. Check 1 covers their safety like any term's.
func (ch *checker) stepDowns() {
	for _, p := range ch.procs {
		for _, e := range p.events {
			if e.Ev != "end" || e.Role != "elect" {
				continue
			}
			switch {
			case strings.HasPrefix(e.Detail, "stepped down (priority)"):
				ch.r.Preemptions++
			case strings.HasPrefix(e.Detail, "stepped down (requested)"):
				ch.r.HandOvers++
			}
		}
	}
}

// processes: check 6. Crashes, panics, goroutines and heap.
func (ch *checker) processes() {
	for _, p := range ch.procs {
		ws := WorkerStats{Name: p.in.name}
		for _, e := range p.events {
			if e.Ev == "stats" {
				ws.MaxGoroutines = max(ws.MaxGoroutines, e.Goroutines)
				ws.MaxHeapMB = max(ws.MaxHeapMB, float64(e.HeapBytes)/(1<<20))
			}
		}
		b, _ := os.ReadFile(p.in.stderr)
		out := string(b)
		if strings.Contains(out, "panic:") || strings.Contains(out, "fatal error:") || strings.Contains(out, "DATA RACE") {
			ws.Panicked = true
			ch.r.Panics++
		}
		switch {
		case p.in.killed:
			ws.Exit = "killed by the nemesis"
		case p.in.exit == nil:
			ws.Exit = "exit 0"
		default:
			ws.Exit = p.in.exit.Error()
			ch.r.Crashes++
		}
		ch.r.Workers = append(ch.r.Workers, ws)
	}
}

// at formats a shared-clock time as seconds since the run began.
func (ch *checker) at(t int64) string {
	return fmt.Sprintf("%+.3fs", float64(t-ch.began)/1e9)
}

// around lists, in time order, the nemesis's actions and the workers'
// terms, ends and paused writes within two seconds of t.
func (ch *checker) around(t int64) string {
	if t == 0 {
		return ""
	}
	const window = int64(2 * time.Second)
	type line struct {
		at   int64
		text string
	}
	var lines []line
	for _, e := range ch.nemesis {
		if e.T >= t-window && e.T <= t+window {
			lines = append(lines, line{e.T, fmt.Sprintf("nemesis %s %s %s", e.Action, e.Worker, e.Detail)})
		}
	}
	for _, p := range ch.procs {
		for _, e := range p.events {
			if e.T < t-window || e.T > t+window {
				continue
			}
			switch e.Ev {
			case "term":
				lines = append(lines, line{e.T, fmt.Sprintf("%s %s term token %d, sent %s, valid until %s", p.in.name, e.Role, e.Token, ch.at(e.Start), ch.at(e.Until))})
			case "end":
				lines = append(lines, line{e.T, fmt.Sprintf("%s %s ended: %s", p.in.name, e.Role, e.Detail)})
			case "paused-write", "paused-write-sent", "terminating":
				lines = append(lines, line{e.T, fmt.Sprintf("%s %s", p.in.name, e.Ev)})
			case "drift":
				lines = append(lines, line{e.T, fmt.Sprintf("%s clock rate %s", p.in.name, e.Detail)})
			}
		}
	}
	slices.SortFunc(lines, func(a, b line) int { return cmp64(a.at, b.at) })
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s %s\n", ch.at(l.at), l.text)
	}
	return b.String()
}
