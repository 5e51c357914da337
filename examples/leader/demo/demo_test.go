//go:build unix

package main

import (
	"maps"
	"testing"
	"time"
)

func TestParseFields(t *testing.T) {
	got := parseFields(`2026-11-21T12:00:00.123Z id=cand-1 event=term-ended err="election: leadership lost: a=b \"q\"" x=1`)
	want := map[string]string{
		"time":  "2026-11-21T12:00:00.123Z",
		"id":    "cand-1",
		"event": "term-ended",
		"err":   `election: leadership lost: a=b "q"`,
		"x":     "1",
	}
	if !maps.Equal(got, want) {
		t.Errorf("parseFields = %q, want %q", got, want)
	}
}

// TestOverlap feeds the bookkeeping lines as the candidates would print
// them and checks that two leaders at once, and only that, is a problem.
func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string // "cand event"
		want  bool
	}{
		{"handover", []string{"a started-leading", "a stopped-leading", "b started-leading"}, false},
		{"crash", []string{"a started-leading", "a exited", "b started-leading"}, false},
		{"overlap", []string{"a started-leading", "b started-leading", "a stopped-leading"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &demo{
				leading: map[string]time.Duration{}, lastRenewal: map[string]time.Duration{},
				stoppedAt: map[string]time.Duration{}, startLine: map[string]*line{},
			}
			for _, name := range []string{"a", "b"} {
				d.children = append(d.children, &child{name: name, stopping: true})
			}
			for i, s := range tc.lines {
				l := &line{at: time.Duration(i) * time.Second, cand: s[:1]}
				if s[2:] == "exited" {
					l.exited = true
				} else {
					l.text = "T id=" + l.cand + " event=" + s[2:] + " valid-for=1.5s"
					l.fields = parseFields(l.text)
				}
				d.handle(l)
			}
			if d.overlap != tc.want {
				t.Errorf("overlap = %v, want %v (problems: %q)", d.overlap, tc.want, d.problems)
			}
		})
	}
}
