package main_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// run --shared: two shared runs of one name run at once; a run without
// it (a writer) waits for them, and a shared run started while the writer
// waits runs only after the writer; the loss of a shared hold stops its
// command.
func TestDynamoDBRunSharedRunsReadersTogetherAndAWriterAlone(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	start := func(owner, name, script string, shared bool) *commandRun {
		args := []string{"--owner=" + owner, "run"}
		if shared {
			args = append(args, "--shared")
		}
		args = append(args, name, "--", "sh", "-c", script)
		cmd := c.command(args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := &commandRun{done: make(chan error, 1)}
		go func() { r.done <- cmd.Wait() }()
		r.code = func() int { return cmd.ProcessState.ExitCode() }
		return r
	}
	hold := func(n string) string {
		return `touch running` + n + `; while [ ! -e finish` + n + ` ]; do sleep 0.02; done`
	}
	r1, r2 := start("r1", "cfg", hold("1"), true), start("r2", "cfg", hold("2"), true)
	eventually(t, "both shared runs run at once", func() bool { return exists(c.file("running1")) && exists(c.file("running2")) })
	if owner, released := c.row("cfg"); owner != "dynalease:readers" || released {
		t.Fatalf("row while two read: owner %q released %v", owner, released)
	}
	if out, code := c.run("get", "--json", "cfg"); code != 0 || !strings.Contains(out, `"readers": [`) || !strings.Contains(out, `"r1"`) || !strings.Contains(out, `"r2"`) {
		t.Fatalf("get --json while two read: exit %d %q, want both readers listed", code, out)
	}
	w := start("w", "cfg", `touch wrote`, false)
	eventually(t, "the writer queued", func() bool { return c.queued("cfg") == 1 })
	r3 := start("r3", "cfg", `test -e wrote || exit 8; touch read3`, true)
	time.Sleep(300 * time.Millisecond)
	if exists(c.file("wrote")) || exists(c.file("read3")) {
		t.Fatal("the writer ran while two read, or a reader passed the waiting writer")
	}
	for _, n := range []string{"1", "2"} {
		if err := os.WriteFile(c.file("finish"+n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range []*commandRun{r1, r2, w, r3} {
		select {
		case err := <-r.done:
			if err != nil {
				t.Fatalf("run %d: %v (exit %d)", i, err, r.code())
			}
		case <-time.After(patience):
			t.Fatalf("run %d did not end", i)
		}
	}
	if !exists(c.file("wrote")) || !exists(c.file("read3")) {
		t.Fatal("the writer or the last reader never ran")
	}

	// A shared hold taken by a writer's takeover stops its command.
	lost := c.command("--owner=lost", "--lease=4s", "--heartbeat=500ms", "run", "--shared", "--grace=500ms", "gone", "--", "sh", "-c", `touch running4; sleep 60`)
	if err := lost.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- lost.Wait() }()
	eventually(t, "the shared command runs", func() bool { return exists(c.file("running4")) })
	c.steal("gone")
	select {
	case err := <-done:
		if err == nil || lost.ProcessState.ExitCode() != 74 {
			t.Fatalf("a shared run whose row was taken: %v, want exit 74", err)
		}
	case <-time.After(patience):
		t.Fatal("run --shared did not return after its row was taken")
	}
	if out, code := c.run("run", "--shared", "--permits", "2", "sem", "--", "true"); code != 64 {
		t.Fatalf("--shared with --permits: exit %d %q, want 64", code, out)
	}
}

// commandRun is a started command and its end.
type commandRun struct {
	done chan error
	code func() int
}

// queued returns how many waiters the row of name has queued.
func (c *cli) queued(name string) int {
	c.t.Helper()
	out, err := c.raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(c.table),
		Key: map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: name}}, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return 0
	}
	q, _ := out.Item["dynaleaseQueue"].(*types.AttributeValueMemberL)
	if q == nil {
		return 0
	}
	return len(q.Value)
}
