package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run --keys takes all the keys or none: a run over overlapping keys waits
// without taking any of its keys, then runs; a set's loss of one key stops
// the command.
func TestDynamoDBRunKeysTakesAllOrNone(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	first := c.command("--owner=first", "run", "--keys", "a,b", "--", "sh", "-c",
		`echo "$DYNALEASE_LOCK ${DYNALEASE_TOKEN:-none}" > env1; touch running1; while [ ! -e finish1 ]; do sleep 0.02; done`)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first command runs", func() bool { return exists(c.file("running1")) })
	for _, k := range []string{"a", "b"} {
		if owner, released := c.row(k); owner != "first" || released {
			t.Fatalf("row %s while the command runs: owner %q released %v", k, owner, released)
		}
	}
	env, _ := os.ReadFile(c.file("env1"))
	if f := strings.Fields(string(env)); len(f) != 2 || f[0] != "a,b" || f[1] == "none" {
		t.Fatalf("environment %q, want the keys and the set's fencing token", env)
	}
	if out, code := c.run("run", "--no-wait", "--keys", "b,c", "--", "touch", "never"); code != 73 || exists(c.file("never")) {
		t.Fatalf("--no-wait on a set with a held key: %d %q", code, out)
	}
	if owner, _ := c.row("c"); owner != "" {
		t.Fatalf("row c written by a set that could not take b: owner %q", owner)
	}
	second := c.command("--owner=second", "run", "--keys", "c,b", "--", "touch", "ran2")
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if owner, _ := c.row("c"); owner != "" || exists(c.file("ran2")) {
		t.Fatalf("the waiting set took c (owner %q) or ran while b was held", owner)
	}
	if err := os.WriteFile(c.file("finish1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if !exists(c.file("ran2")) {
		t.Fatal("the second command never ran")
	}

	// The loss of one key stops the command.
	third := c.command("--owner=third", "--lease=4s", "--heartbeat=500ms", "run", "--grace=500ms", "--keys", "x,y", "--", "sh", "-c", `touch running3; sleep 60`)
	if err := third.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- third.Wait() }()
	eventually(t, "the third command runs", func() bool { return exists(c.file("running3")) })
	c.steal("y")
	var err error
	select {
	case err = <-done:
	case <-time.After(patience):
		t.Fatal("run did not return after a key was stolen")
	}
	if err == nil || third.ProcessState.ExitCode() != 74 {
		t.Fatalf("run after a key was stolen: %v, want exit 74", err)
	}

	if out, code := c.run("run", "--keys", "a,b", "name", "--", "true"); code != 64 {
		t.Fatalf("run with both --keys and NAME: %d %q, want the usage exit 64", code, out)
	}
}

// run --permits N NAME holds one of N permits: N runs hold at once, the
// next waits; a SIGSTOPped holder's permit is taken over after its lease,
// not before.
func TestDynamoDBRunPermits(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	const lease = 4 * time.Second
	var runs []*exec.Cmd
	for i := range 2 {
		r := c.command(fmt.Sprintf("--owner=p%d", i), "--lease=4s", "--heartbeat=500ms", "run", "--grace=500ms", "--permits", "2", "pay", "--",
			// Written aside, then renamed: the test waits for the file to
			// appear, and must not read it half written.
			"sh", "-c", fmt.Sprintf(`echo "$DYNALEASE_LOCK $DYNALEASE_TOKEN" > env%d.tmp && mv env%d.tmp env%d; sleep 60`, i, i, i))
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Process.Kill(); _ = r.Wait() })
		runs = append(runs, r)
	}
	eventually(t, "two permit holders run", func() bool { return exists(c.file("env0")) && exists(c.file("env1")) })
	slots := map[string]bool{}
	for i := range 2 {
		env, _ := os.ReadFile(c.file(fmt.Sprintf("env%d", i)))
		f := strings.Fields(string(env))
		if len(f) != 2 || !strings.HasPrefix(f[0], "pay#permit-") || f[1] == "" {
			t.Fatalf("environment of permit holder %d: %q", i, env)
		}
		slots[f[0]] = true
	}
	if len(slots) != 2 {
		t.Fatalf("the two holders hold slots %v, want two distinct", slots)
	}
	if out, code := c.run("run", "--no-wait", "--permits", "2", "pay", "--", "touch", "never"); code != 73 || exists(c.file("never")) {
		t.Fatalf("--no-wait with both permits held: %d %q", code, out)
	}
	// SIGSTOP the first holder (its command is in a process group of its
	// own and keeps running; only the supervisor that renews is paused).
	if err := runs[0].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	out, code := c.run("--lease=4s", "run", "--grace=500ms", "--wait=30s", "--permits", "2", "pay", "--", "true")
	took := time.Since(stopped)
	if code != 0 {
		t.Fatalf("a third run after a holder was stopped: %d %q", code, out)
	}
	if took < lease {
		t.Fatalf("the stopped holder's permit was taken %v after the stop, before its %v lease", took, lease)
	}
	t.Logf("the stopped holder's permit was taken %v after the stop (lease %v)", took, lease)
	_ = runs[0].Process.Signal(syscall.SIGCONT)
}

// check-table describes a single-region table, counts its locks and says
// it is usable.
func TestDynamoDBCheckTable(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	if out, code := c.run("--owner=h", "run", "held-by-check", "--", "true"); code != 0 {
		t.Fatalf("run: %d %q", code, out)
	}
	out, code := c.run("check-table")
	if code != 0 || !strings.Contains(out, "single-region") || !strings.Contains(out, "1 rows, 0 held, 1 released") || !strings.Contains(out, "usable") {
		t.Fatalf("check-table: %d %q", code, out)
	}
	out, code = c.run("check-table", "--json")
	if code != 0 || !strings.Contains(out, `"verdict":"usable"`) {
		t.Fatalf("check-table --json: %d %q", code, out)
	}
}

// check-table on a global table (DescribeTable answered by the test hook,
// as Amazon DynamoDB describes one; DynamoDB Local has none): MREC refused
// with exit 69, accepted with --single-writer-region; MRSC usable, with
// what it lacks named.
func TestDynamoDBCheckTableOnGlobalTables(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	describe := func(consistency string) string {
		return `{"Table":{"TableName":"` + c.table + `","TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"key","KeyType":"HASH"}],` +
			`"Replicas":[{"RegionName":"eu-west-1"},{"RegionName":"eu-central-1"}],"MultiRegionConsistency":"` + consistency + `"}}`
	}
	check := func(consistency string, args ...string) (string, int) {
		cmd := c.command(append([]string{"check-table"}, args...)...)
		cmd.Path = hookBin
		cmd.Env = append(cmd.Env, "DYNALEASE_TESTHOOK_DESCRIBE_TABLE="+describe(consistency))
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	if out, code := check("EVENTUAL"); code != 69 || !strings.Contains(out, "refused") || !strings.Contains(out, "eu-central-1") {
		t.Fatalf("check-table on an MREC table: %d %q, want exit 69, refused, naming the replicas", code, out)
	}
	if out, code := check("EVENTUAL", "--single-writer-region"); code != 0 || !strings.Contains(out, "single-writer-region") {
		t.Fatalf("check-table --single-writer-region on an MREC table: %d %q, want usable, saying why", code, out)
	}
	if out, code := check("STRONG"); code != 0 || !strings.Contains(out, "MRSC") || !strings.Contains(out, "guarded writes") {
		t.Fatalf("check-table on an MRSC table: %d %q, want usable, naming what MRSC lacks", code, out)
	}
	// run on an MREC table is refused before the command starts.
	cmd := c.command("run", "job", "--", "touch", "never")
	cmd.Path = hookBin
	cmd.Env = append(cmd.Env, "DYNALEASE_TESTHOOK_DESCRIBE_TABLE="+describe("EVENTUAL"))
	if out, err := cmd.CombinedOutput(); err == nil || exists(c.file("never")) || !strings.Contains(string(out), "eventual") {
		t.Fatalf("run on an MREC table: %v %q, want refused before the command", err, out)
	}
}
