package main

import (
	"time"

	"github.com/go-logr/logr"
)

// termSink turns the Elector's own log of its terms into events: "started
// leading" (the send time of the acquiring write and the validity),
// "renewed" (a later validity) and "stopped leading" (when the term ended,
// if before its validity). These are the times the library itself acted
// on, on the shared clock, so the checker compares exactly what each
// leader believed (translated from the worker's drifting clock; see
// driftClock). Everything else the Elector logs goes to stderr at
// level 0 only.
type termSink struct {
	w      *worker
	role   string
	values []any
}

func termLogger(w *worker, role string) logr.Logger {
	return logr.New(&termSink{w: w, role: role})
}

func (s *termSink) Init(logr.RuntimeInfo) {}
func (s *termSink) Enabled(int) bool      { return true }

func (s *termSink) Info(level int, msg string, kv ...any) {
	switch msg {
	case "started leading":
		tok, _ := valueOf(kv, "token").(int64)
		s.w.log.log(Event{Ev: "term", Worker: s.w.cfg.id, Role: s.role, Token: tok,
			Start: s.w.clk.shared(timeOf(kv, "sent")), Until: s.w.clk.shared(timeOf(kv, "validUntil"))})
	case "renewed":
		s.w.log.log(Event{Ev: "extend", Worker: s.w.cfg.id, Role: s.role, Until: s.w.clk.shared(timeOf(kv, "validUntil"))})
	case "stopped leading":
		until := s.w.clk.shared(timeOf(kv, "until"))
		s.w.log.log(Event{Ev: "end", Worker: s.w.cfg.id, Role: s.role, T: until, Detail: reasonOf(kv)})
	}
}

func (s *termSink) Error(err error, msg string, kv ...any) {}

func (s *termSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any(nil), s.values...), kv...)
	return &c
}

func (s *termSink) WithName(string) logr.LogSink { return s }

// valueOf returns the value of key in a key-value list, nil when absent.
func valueOf(kv []any, key string) any {
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok && k == key {
			return kv[i+1]
		}
	}
	return nil
}

func timeOf(kv []any, key string) time.Time {
	t, _ := valueOf(kv, key).(time.Time)
	return t
}

func reasonOf(kv []any) string {
	s, _ := valueOf(kv, "reason").(string)
	return s
}
