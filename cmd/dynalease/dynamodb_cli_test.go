package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/testbin"
)

const patience = time.Minute

// cli is the built command with an environment pointing at DynamoDB Local
// and a table of its own.
type cli struct {
	t        *testing.T
	bin, dir string
	env      []string
	table    string
	raw      *dynamodb.Client // same credentials as the command
}

// bin is the command and hookBin the command built with its test hooks
// (testhook_on.go), both built once, by the first test that needs them
// (the fuzz targets of this package do not).
var (
	bin, hookBin string
	buildOnce    sync.Once
	buildErr     error
	buildDir     string
)

func buildBinaries(t *testing.T) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "dynalease-cli")
		if buildErr != nil {
			return
		}
		bin = filepath.Join(buildDir, "dynalease")
		hookBin = filepath.Join(buildDir, "dynalease-testhook")
		if buildErr = testbin.Build(bin, ".", nil); buildErr == nil {
			buildErr = testbin.Build(hookBin, ".", nil, "-tags", "dynalease_testhook")
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	endpoint := ddbtest.Endpoint(t)
	buildBinaries(t)
	table := fmt.Sprintf("cli-%d", time.Now().UnixNano())
	c := &cli{t: t, bin: bin, dir: t.TempDir(), table: table}
	c.env = append(os.Environ(), "AWS_ACCESS_KEY_ID=clitest", "AWS_SECRET_ACCESS_KEY=clitest", "AWS_REGION=us-east-1",
		"AWS_PROFILE=", "DYNALEASE_ENDPOINT="+endpoint, "DYNALEASE_TABLE="+table)
	c.raw = dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("clitest", "clitest", "")}, ddbtest.EmulatorOptions)
	if out, code := c.run("create-table"); code != 0 {
		t.Fatalf("create-table: %d %s", code, out)
	}
	return c
}

// command returns the command line args, not started.
func (c *cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	cmd.Dir = c.dir
	return cmd
}

// run runs args to the end and returns the combined output and exit code.
func (c *cli) run(args ...string) (string, int) {
	c.t.Helper()
	var out bytes.Buffer
	cmd := c.command(args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return out.String(), 0
}

func (c *cli) file(name string) string { return filepath.Join(c.dir, name) }

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// steal writes another owner's row over name, as an AWS Java client's
// takeover would.
func (c *cli) steal(name string) {
	c.t.Helper()
	if _, err := c.raw.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: map[string]types.AttributeValue{
		"key": &types.AttributeValueMemberS{Value: name}, "ownerName": &types.AttributeValueMemberS{Value: "thief"},
		"recordVersionNumber": &types.AttributeValueMemberS{Value: "stolen"}, "leaseDuration": &types.AttributeValueMemberS{Value: "60000"},
	}}); err != nil {
		c.t.Fatal(err)
	}
}

// row returns the lock row's owner and released flag.
func (c *cli) row(name string) (string, bool) {
	out, err := c.raw.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(c.table),
		Key: map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: name}}, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return "", false
	}
	owner, _ := out.Item["ownerName"].(*types.AttributeValueMemberS)
	_, released := out.Item["isReleased"]
	if owner == nil {
		return "", released
	}
	return owner.Value, released
}

// The command runs only while the lock is held, gets its environment, and
// its exit code is run's; a second run on the name waits, then runs.
func TestDynamoDBRunHoldsTheLockWhileTheCommandRuns(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	// The owner comes from DYNALEASE_OWNER, which the command does not
	// inherit (a nested dynalease must make an owner name of its own).
	first := c.command("run", "job", "--", "sh", "-c",
		`echo "$DYNALEASE_LOCK $DYNALEASE_LOCK_OWNER $DYNALEASE_TOKEN ${DYNALEASE_OWNER:-unset}" > env1; touch running1; while [ ! -e finish1 ]; do sleep 0.02; done; exit 3`)
	first.Env = append(first.Env, "DYNALEASE_OWNER=first")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first command runs", func() bool { return exists(c.file("running1")) })
	if owner, released := c.row("job"); owner != "first" || released {
		t.Fatalf("row while the command runs: owner %q released %v", owner, released)
	}
	env, _ := os.ReadFile(c.file("env1"))
	if f := strings.Fields(string(env)); len(f) != 4 || f[0] != "job" || f[1] != "first" || f[3] != "unset" {
		t.Fatalf("environment %q", env)
	} else if tok, err := strconv.ParseInt(f[2], 10, 64); err != nil || tok <= 0 {
		t.Fatalf("DYNALEASE_TOKEN %q", f[2])
	}

	// --no-wait fails at once with its code.
	if out, code := c.run("run", "--no-wait", "job", "--", "touch", "never"); code != 73 || exists(c.file("never")) {
		t.Fatalf("--no-wait on a held lock: %d %q", code, out)
	}
	// A second run waits for the lock.
	second := c.command("--owner=second", "run", "job", "--", "touch", "ran2")
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if exists(c.file("ran2")) {
		t.Fatal("the second command ran while the first held the lock")
	}
	if err := os.WriteFile(c.file("finish1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err == nil || first.ProcessState.ExitCode() != 3 {
		t.Fatalf("first run: %v, want the command's exit code 3", err)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if !exists(c.file("ran2")) {
		t.Fatal("the second command never ran")
	}
	if _, released := c.row("job"); !released {
		t.Fatal("the lock was not released after the command exited")
	}

	var one []map[string]any
	out, code := c.run("get", "job", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &one) != nil || len(one) != 1 || one[0]["name"] != "job" {
		t.Fatalf("get --json: %d %q", code, out)
	}
	out, code = c.run("list", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &one) != nil || len(one) != 1 {
		t.Fatalf("list --json: %d %q", code, out)
	}
}

// When the lock is stolen, the command's whole process group, a grandchild
// started through sh -c included, is stopped within a heartbeat plus the
// grace period, and run exits 74.
func TestDynamoDBRunStopsTheProcessGroupWhenTheLockIsLost(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	cmd := c.command("--lease=4s", "--heartbeat=500ms", "run", "--grace=500ms", "job", "--", "sh", "-c",
		`sleep 300 & echo $! > grandchild; trap '' TERM; while true; do sleep 0.05; done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the grandchild starts", func() bool { b, _ := os.ReadFile(c.file("grandchild")); return len(bytes.TrimSpace(b)) > 0 })
	b, _ := os.ReadFile(c.file("grandchild"))
	grandchild, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	c.steal("job") // another owner (a Java client) writes over the row
	stolen := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("run did not return after the lock was stolen")
	}
	if code := cmd.ProcessState.ExitCode(); code != 74 {
		t.Fatalf("exit code %d, want 74", code)
	}
	if err := syscall.Kill(grandchild, 0); err == nil {
		t.Fatalf("the grandchild %d is still alive", grandchild)
	}
	t.Logf("stopped %v after the theft (heartbeat 500ms + grace 500ms; the command ignored SIGTERM)", time.Since(stolen))
}

// Signals reach the command, and its exit code is run's.
func TestDynamoDBRunForwardsSignals(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	cmd := c.command("run", "job", "--", "sh", "-c", `trap 'touch got-term; exit 5' TERM; touch ready; while true; do sleep 0.02; done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the command is ready", func() bool { return exists(c.file("ready")) })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 5 || !exists(c.file("got-term")) {
		t.Fatalf("exit code %d (want the command's 5), SIGTERM seen: %v", code, exists(c.file("got-term")))
	}
}

// Bad input: one line on stderr and the documented code, never a trace.
func TestDynamoDBBadInput(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		env  []string
		code int
	}{
		{[]string{"--bogus"}, nil, 64},
		{[]string{"run", "job"}, nil, 64},
		{[]string{"run", "job", "true"}, nil, 64},
		{[]string{"run", "--lease=2s", "--grace=5s", "job", "--", "true"}, nil, 64},
		{[]string{"--lease=2s", "elect", "--grace=500ms", "job", "--", "true"}, nil, 64},
		{[]string{"run", "job", "--", "true"}, []string{"DYNALEASE_TABLE=no-such-table"}, 69},
		{[]string{"list"}, []string{"DYNALEASE_ENDPOINT=http://127.0.0.1:1"}, 69},
	} {
		cmd := c.command(tc.args...)
		cmd.Env = append(cmd.Env, tc.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != tc.code || len(lines) != 1 || strings.Contains(stderr.String(), "goroutine ") {
			t.Errorf("%v %v: exit %d, stderr %q; want exit %d and one line", tc.args, tc.env, code, stderr.String(), tc.code)
		}
	}
}

// Two candidates: the leader's command runs, the other's does not; SIGTERM
// to the leader stops its command and hands over within a poll.
func TestDynamoDBElectHandsOverOnSIGTERM(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	start := func(id string) *exec.Cmd {
		cmd := c.command("--owner="+id, "--lease=3s", "elect", "--retry=100ms", "--grace=500ms", "sched", "--",
			"sh", "-c", `touch running-`+id+`; trap 'rm running-`+id+`; exit 0' TERM; while true; do sleep 0.02; done`)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	a := start("a")
	eventually(t, "a leads and runs its command", func() bool { return exists(c.file("running-a")) })
	b := start("b")
	defer b.Process.Kill()
	time.Sleep(300 * time.Millisecond)
	if exists(c.file("running-b")) {
		t.Fatal("both candidates run the command")
	}
	sent := time.Now()
	if err := a.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("a after SIGTERM: %v", err)
	}
	if exists(c.file("running-a")) {
		t.Fatal("a's command still runs after a exited")
	}
	eventually(t, "b takes over", func() bool { return exists(c.file("running-b")) })
	t.Logf("handover %v after SIGTERM (the lease is 3 s)", time.Since(sent))
	if err := b.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = b.Wait()
}

// release needs --force, prints what it releases, and is conditioned on
// what it read; observe prints each change of holder.
func TestDynamoDBReleaseAndObserve(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	obs := c.command("observe", "--interval=20ms", "--json", "job")
	out := &syncBuffer{}
	obs.Stdout = out
	if err := obs.Start(); err != nil {
		t.Fatal(err)
	}
	holder := c.command("--owner=stuck", "run", "job", "--", "sh", "-c", `touch running; while true; do sleep 0.02; done`)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the holder runs", func() bool { return exists(c.file("running")) })
	if got, code := c.run("release", "job"); code != 64 || !strings.Contains(got, "owner stuck") {
		t.Fatalf("release without --force: %d %q", code, got)
	}
	// A heartbeat of the holder between release's read and its
	// conditional write refuses the release (exit 73, read it again): a
	// busy machine widens that gap, so release is tried again then.
	got, code := c.run("release", "job", "--force")
	for try := 1; code == 73 && try < 5; try++ {
		got, code = c.run("release", "job", "--force")
	}
	if code != 0 || !strings.Contains(got, "released") {
		t.Fatalf("release --force: %d %q", code, got)
	}
	// The holder finds its lock released by someone else and stops.
	_ = holder.Wait()
	if code := holder.ProcessState.ExitCode(); code != 74 {
		t.Fatalf("the holder's run exit %d, want 74", code)
	}
	eventually(t, "observe saw held then released", func() bool {
		s := out.String()
		return strings.Contains(s, `"state":"held"`) && strings.Contains(s, `"state":"released"`)
	})
	_ = obs.Process.Signal(syscall.SIGINT)
	if err := obs.Wait(); err != nil {
		t.Fatalf("observe after SIGINT: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("observe line %q: %v", line, err)
		}
	}
}

// syncBuffer is a bytes.Buffer that a command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// --metrics-addr serves the elector's metrics and probes.
func TestDynamoDBElectServesMetricsAndProbes(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	_, scrape := startServing(t, c, "--lease=3s", "elect", "--retry=100ms", "--grace=500ms", "sched", "--", "sh", "-c", `while true; do sleep 0.02; done`)
	eventually(t, "the leader gauge is 1", func() bool {
		_, body := scrape("/metrics")
		return strings.Contains(body, `dynalease_election_leader{election="sched"} 1`)
	})
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := scrape(p); code != http.StatusOK {
			t.Fatalf("%s: %d %q", p, code, body)
		}
	}
}

// elect --once whose term is stolen stops its command and exits 74; a
// table with another key schema is refused with 69.
func TestDynamoDBElectOnceLosesAStolenTerm(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	cmd := c.command("--lease=3s", "elect", "--once", "--retry=100ms", "--grace=500ms", "sched", "--",
		"sh", "-c", `echo $$ > child; while true; do sleep 0.02; done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the command runs", func() bool { return exists(c.file("child")) })
	c.steal("sched") // another owner (a Java client) writes over the row
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 74 {
		t.Fatalf("elect --once after a stolen term: exit %d, want 74", code)
	}
	b, _ := os.ReadFile(c.file("child"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 || syscall.Kill(pid, 0) == nil {
		t.Fatalf("the command (pid %d) outlived the term", pid)
	}

	// A table keyed by another attribute.
	other := fmt.Sprintf("cli-other-%d", time.Now().UnixNano())
	if _, err := c.raw.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(other),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--table=" + other, "run", "job", "--", "true"}, {"--table=" + other, "--no-fencing", "create-table"}} {
		out, code := c.run(args...)
		if code != 69 || len(strings.Split(strings.TrimSpace(out), "\n")) != 1 {
			t.Errorf("%v on a table of another schema: exit %d, output %q; want 69 and one line", args, code, out)
		}
	}
}

// run --metrics-addr serves the lock client's metrics and probes.
func TestDynamoDBRunServesMetricsAndProbes(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	_, get := startServing(t, c, "run", "job", "--", "sh", "-c", `while true; do sleep 0.02; done`)
	eventually(t, "ready once the lock is held", func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
	if _, body := get("/metrics"); !strings.Contains(body, `dynalease_lock_held{client="job",kind="lock"} 1`) {
		t.Fatalf("metrics without the held lock:\n%s", body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d", code)
	}
}

// startServing starts the command with --metrics-addr on a free port and
// returns it with a function that GETs a path of its server.
func startServing(t *testing.T, c *cli, args ...string) (*exec.Cmd, func(path string) (int, string)) {
	t.Helper()
	cmd := c.command(append([]string{"--metrics-addr=127.0.0.1:0"}, args...)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	serving := regexp.MustCompile(`serving metrics on (http://\S+)/metrics`)
	var base string
	eventually(t, "the metrics server starts", func() bool {
		if m := serving.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
		return base != ""
	})
	return cmd, func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
