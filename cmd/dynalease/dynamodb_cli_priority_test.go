package main_test

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A candidate of higher priority takes the election from a running leader
// at a safe point (the leader's command stopped first); get lists both
// candidates; SIGUSR1 to the new leader hands the election back.
func TestDynamoDBElectPriorityAndSIGUSR1(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	start := func(id, priority string) *exec.Cmd {
		cmd := c.command("--owner="+id, "--lease=3s", "elect", "--retry=100ms", "--grace=500ms", "--priority="+priority, "sched", "--",
			"sh", "-c", `echo `+id+` >> starts; touch running-`+id+`; trap 'rm running-`+id+`; exit 0' TERM; while true; do sleep 0.02; done`)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	starts := func() string { b, _ := os.ReadFile(c.file("starts")); return string(b) }
	start("low", "0")
	eventually(t, "low leads and runs its command", func() bool { return exists(c.file("running-low")) })
	high := start("high", "5")
	eventually(t, "high takes over", func() bool { return starts() == "low\nhigh\n" })
	eventually(t, "get lists both candidates", func() bool {
		out, code := c.run("get", "--json", "sched")
		return code == 0 && strings.Contains(out, `"identity": "low"`) && strings.Contains(out, `"identity": "high"`) && strings.Contains(out, `"priority": 5`)
	})
	eventually(t, "get's table lists the leader's priority", func() bool {
		out, code := c.run("get", "sched")
		return code == 0 && strings.Contains(out, "high (priority 5)")
	})
	// SIGUSR1 hands over to low, the only other candidate, although it
	// ranks lower (high, standing again, takes the lease back after
	// MinTerm: both starts are seen, in order). A signal that finds no
	// live candidate (low's process starved on a busy machine, its entry
	// not rewritten lately) is refused and the term goes on, so the
	// signal is sent again each second until the hand-over is seen.
	var signalled time.Time
	eventually(t, "SIGUSR1 hands over to low", func() bool {
		if strings.HasPrefix(starts(), "low\nhigh\nlow\n") {
			return true
		}
		if time.Since(signalled) > time.Second {
			if err := high.Process.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			signalled = time.Now()
		}
		return false
	})
	if exists(c.file("running-low")) && exists(c.file("running-high")) {
		t.Fatal("both commands run")
	}
}
