// Package logtest records structured log entries in memory so tests can
// assert on what was logged, with the values themselves rather than their
// formatting.
package logtest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Entry is one recorded log call.
type Entry struct {
	Level  int // V level; errors are recorded at level 0 with Err set
	Msg    string
	Err    error
	Values map[string]any // keys and values, those added by WithValues included
	At     time.Time      // when it was logged, on this process's clock
}

// String formats the entry on one line: its time, level, message, error
// and values (sorted by key), for a test's diagnostics.
func (e Entry) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s V%d %q", e.At.Format(time.StampMicro), e.Level, e.Msg)
	if e.Err != nil {
		fmt.Fprintf(&b, " error=%q", e.Err.Error())
	}
	keys := make([]string, 0, len(e.Values))
	for k := range e.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := e.Values[k]
		if t, ok := v.(time.Time); ok {
			v = t.Format(time.StampMicro)
		}
		fmt.Fprintf(&b, " %s=%v", k, v)
	}
	return b.String()
}

// Recorder is a logr.LogSink that records every entry at every level.
// The zero value is ready to use; it is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	entries []Entry
}

// Logger returns a logr.Logger writing to r.
func (r *Recorder) Logger() logr.Logger { return logr.New(&sink{r: r}) }

// Entries returns a copy of the entries recorded so far.
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.entries...)
}

// Find returns the recorded entries with message msg.
func (r *Recorder) Find(msg string) []Entry {
	var out []Entry
	for _, e := range r.Entries() {
		if e.Msg == msg {
			out = append(out, e)
		}
	}
	return out
}

func (r *Recorder) add(e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
}

type sink struct {
	r      *Recorder
	values []any
}

func (s *sink) Init(logr.RuntimeInfo)  {}
func (s *sink) Enabled(level int) bool { return true }

func (s *sink) Info(level int, msg string, kv ...any) {
	s.r.add(Entry{Level: level, Msg: msg, Values: s.collect(kv), At: time.Now()})
}

func (s *sink) Error(err error, msg string, kv ...any) {
	s.r.add(Entry{Msg: msg, Err: err, Values: s.collect(kv), At: time.Now()})
}

func (s *sink) WithValues(kv ...any) logr.LogSink {
	return &sink{r: s.r, values: append(append([]any(nil), s.values...), kv...)}
}

func (s *sink) WithName(string) logr.LogSink { return s }

func (s *sink) collect(kv []any) map[string]any {
	m := map[string]any{}
	all := append(append([]any(nil), s.values...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		if k, ok := all[i].(string); ok {
			m[k] = all[i+1]
		}
	}
	return m
}
