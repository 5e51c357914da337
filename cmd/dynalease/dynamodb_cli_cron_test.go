//go:build linux

package main_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cronLines reads the lines the cron tests' command appends: "OWNER SLOT
// ATTEMPT TOKEN" per run.
func cronLines(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 4 {
			out = append(out, f)
		}
	}
	return out
}

// Three instances of dynalease cron on one job, a slot every second: each
// slot's command runs once, on one of them, with its slot, attempt and
// token in its environment; the instance running a slot is killed (with
// its command), and the others go on with the later slots.
func TestDynamoDBCronRunsEachSlotOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	runs := c.file("runs")
	script := `echo "$DYNALEASE_LOCK_OWNER $DYNALEASE_SLOT $DYNALEASE_ATTEMPT $DYNALEASE_TOKEN" >> ` + runs + `; echo $$ > ` + c.file("pid-") + `"$DYNALEASE_LOCK_OWNER"; sleep 0.3`
	procs := map[string]*os.Process{}
	for _, owner := range []string{"o1", "o2", "o3"} {
		cmd := c.command("--owner", owner, "--lease", "3s", "cron", "job", "--schedule", "@every 1s", "--grace", "200ms", "--", "sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[owner] = cmd.Process
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
	}
	eventually(t, "two slots run", func() bool { return len(cronLines(t, runs)) >= 2 })

	// Kill the instance that ran the latest slot, and its command, as a
	// crashed machine would be.
	lines := cronLines(t, runs)
	victim := lines[len(lines)-1][0]
	_ = procs[victim].Kill()
	if pid, err := os.ReadFile(c.file("pid-" + victim)); err == nil {
		var p int
		for _, ch := range strings.TrimSpace(string(pid)) {
			p = p*10 + int(ch-'0')
		}
		_ = syscall.Kill(-p, syscall.SIGKILL)
	}
	killed := len(lines)
	eventually(t, "two more slots run after the kill", func() bool { return len(cronLines(t, runs)) >= killed+2 })

	seen := map[string]string{}
	var last time.Time
	for _, l := range cronLines(t, runs) {
		owner, slot, attempt := l[0], l[1], l[2]
		key := slot + "/" + attempt
		if prev, twice := seen[key]; twice {
			t.Fatalf("slot %s attempt %s ran twice: on %s and %s", slot, attempt, prev, owner)
		}
		seen[key] = owner
		at, err := time.Parse(time.RFC3339, slot)
		if err != nil {
			t.Fatalf("DYNALEASE_SLOT %q: %v", slot, err)
		}
		if attempt == "1" && !at.After(last) {
			t.Fatalf("slot %s started after slot %s", at, last)
		}
		last = at
		if l[3] == "" || l[3] == "0" {
			t.Fatalf("no token: %v", l)
		}
	}
	out, code := c.run("jobs")
	if code != 0 || !strings.Contains(out, "job") || !strings.Contains(out, "succeeded") {
		t.Fatalf("dynalease jobs: %d\n%s", code, out)
	}
}
