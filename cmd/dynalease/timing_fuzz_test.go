package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// The command's arguments, fuzzed (review issue): duration flags as typed
// and lock names. Whatever the command accepts, the library accepts too
// (a refusal is the command's usage error, exit 64, naming the flag, never
// a library error once running), and what it computes keeps its promise:
// the command is stopped before anyone else may take the lock or term.

// parseRunFlags parses run's duration flags as the command line would.
func parseRunFlags(t *testing.T, args []string) (*common, time.Duration, bool) {
	root := newRoot()
	run, _, err := root.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.ParseFlags(args); err != nil {
		return nil, 0, false
	}
	get := func(name string) time.Duration {
		d, err := run.Flags().GetDuration(name)
		if err != nil {
			t.Fatalf("flag %s: %v", name, err)
		}
		return d
	}
	c := &common{lease: get("lease"), heartbeat: get("heartbeat"), requestTimeout: get("request-timeout")}
	return c, get("grace"), true
}

// FuzzRunTimes: run's timings, from the flags as typed.
func FuzzRunTimes(f *testing.F) {
	f.Add("20s", "0", "2s", "2s")
	f.Add("4s", "500ms", "2s", "500ms")
	f.Add("3s", "0", "1ms", "0s")
	f.Add("2562047h47m16.854775807s", "2562047h47m16.854775807s", "2562047h47m16.854775807s", "2562047h47m16.854775807s")
	f.Add("-1s", "-1s", "0", "-1ns")
	f.Add("1000h", "1ns", "10ms", "1h")
	f.Fuzz(func(t *testing.T, lease, heartbeat, timeout, grace string) {
		c, g, ok := parseRunFlags(t, []string{"--lease=" + lease, "--heartbeat=" + heartbeat, "--request-timeout=" + timeout, "--grace=" + grace})
		if !ok {
			return // cobra's own usage error
		}
		rt, err := c.runTimes(g)
		if err != nil {
			return
		}
		if rt.margin < g || rt.margin >= rt.lease/2 {
			t.Fatalf("margin %v for grace %v and lease %v", rt.margin, g, rt.lease)
		}
		_, err = lock.New(lock.Config{
			Store: memorystore.New(), LeaseDuration: rt.lease, SafetyMargin: rt.margin,
			HeartbeatPeriod: rt.heartbeat, RequestTimeout: rt.requestTimeout,
		})
		if err != nil {
			t.Fatalf("run accepted %+v (lease %s heartbeat %s timeout %s grace %s) but the lock client refuses it: %v",
				rt, lease, heartbeat, timeout, grace, err)
		}
	})
}

// FuzzElectTimes: elect's timings, from the flags as numbers.
func FuzzElectTimes(f *testing.F) {
	f.Add(int64(20*time.Second), int64(2*time.Second), int64(2*time.Second), int64(0))
	f.Add(int64(4*time.Second), int64(2*time.Second), int64(500*time.Millisecond), int64(100*time.Millisecond))
	f.Add(int64(3*time.Second), int64(10*time.Millisecond), int64(0), int64(1))
	f.Add(int64(1<<63-1), int64(1<<63-1), int64(1<<63-1), int64(1<<63-1))
	f.Add(int64(1<<63-1), int64(2*time.Second), int64(1<<62), int64(0))
	f.Add(int64(-1), int64(-1), int64(-1), int64(-1))
	f.Add(int64(200*time.Second), int64(2*time.Second), int64(0), int64(0)) // found in review: a long lease
	f.Fuzz(func(t *testing.T, lease, timeout, grace, retry int64) {
		c := &common{lease: time.Duration(lease), requestTimeout: time.Duration(timeout)}
		et, err := c.electTimes(time.Duration(grace), time.Duration(retry))
		if err != nil {
			return
		}
		g := time.Duration(grace)
		if et.lease-et.renew < g+noticeSlack || et.renew < g+noticeSlack {
			t.Fatalf("renew %v leaves no room to stop within grace %v (lease %v)", et.renew, g, et.lease)
		}
		_, err = election.New(election.Config{Store: memorystore.New(), Name: "job", Identity: "me", LeaseDuration: et.lease, RenewDeadline: et.renew,
			RetryPeriod: et.retry, RequestTimeout: et.requestTimeout,
			Callbacks: election.Callbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}})
		if err != nil {
			t.Fatalf("elect accepted %+v but the elector refuses it: %v", et, err)
		}
	})
}

// FuzzLockName: a lock name as typed is either refused before any request
// (an option error, the command's usage error) or taken and released as
// that exact name; never a panic.
func FuzzLockName(f *testing.F) {
	f.Add("nightly-report")
	f.Add("")
	f.Add("tenant/42:export")
	f.Add(string(make([]byte, record.MaxNameBytes+1)))
	f.Add("\x00\xff--")
	f.Fuzz(func(t *testing.T, name string) {
		lc, err := lock.New(lock.Config{Store: memorystore.New(), Identity: "me", ManualHeartbeats: true})
		if err != nil {
			t.Fatal(err)
		}
		l, err := lc.TryAcquire(t.Context(), name)
		if err != nil {
			if !errors.Is(err, dynalease.ErrInvalid) || classify(err).(*exitError).code != exitUsage {
				t.Fatalf("TryAcquire(%q) = %v, want a usage error", name, err)
			}
			return
		}
		if l.Key() != name {
			t.Fatalf("took %q for %q", l.Key(), name)
		}
		info, err := lc.Get(t.Context(), name)
		if err != nil || info.Key != name || info.HolderIdentity != "me" {
			t.Fatalf("Get(%q) = %+v, %v", name, info, err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
