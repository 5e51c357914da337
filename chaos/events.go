package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Event is one line of a worker's or the nemesis's log. Times are
// CLOCK_MONOTONIC nanoseconds (see mono), comparable across processes.
type Event struct {
	Ev     string `json:"ev"`
	Worker string `json:"w,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	// Role is "elect" for the election, "lock:KEY" for a lock.
	Role  string `json:"role,omitempty"`
	Token int64  `json:"tok,omitempty"`
	// T is when the event happened.
	T int64 `json:"t"`

	// term: Start is the send time of the acquiring write, Until the
	// validity; extend: Until; end: T.
	Start int64 `json:"start,omitempty"`
	Until int64 `json:"until,omitempty"`

	// sample: the check (IsLeader, IsHeld) returned true between Before
	// and T.
	Before int64 `json:"b,omitempty"`

	// write: Seq numbers the worker's guarded writes; Phase is "send" or
	// "done"; Outcome one of the outcome* constants.
	Seq     int64  `json:"seq,omitempty"`
	Phase   string `json:"phase,omitempty"`
	Outcome string `json:"out,omitempty"`
	Err     string `json:"err,omitempty"`

	// stats
	Goroutines int    `json:"gr,omitempty"`
	HeapBytes  uint64 `json:"heap,omitempty"`

	// nemesis: Action and what it targets.
	Action string `json:"act,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Outcomes of a guarded write, as the worker saw them.
const (
	outcomeAck           = "ack"            // committed
	outcomeRefusedServer = "refused-server" // the server refused it: nothing applied
	outcomeRefusedLocal  = "refused-local"  // refused before sending
	outcomeCondition     = "condition"      // the caller's own condition failed: nothing applied
	outcomeUnknown       = "unknown"        // the answer was lost
)

// eventLog appends events to a file, one JSON object per line, each written
// with one write call so that a SIGKILL leaves whole lines behind.
type eventLog struct {
	mu sync.Mutex
	f  *os.File
}

func openEventLog(path string) (*eventLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &eventLog{f: f}, nil
}

func (l *eventLog) log(e Event) {
	if e.T == 0 {
		e.T = mono()
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(b); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: writing the event log:", err)
	}
}

func (l *eventLog) close() error { return l.f.Close() }

// readEvents reads an event log; a last line cut short by a crash is
// skipped.
func readEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
