//go:build unix

package lock_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/testbin"
)

// The holder process of these tests is lock/internal/holder, built
// here; see its documentation for the line protocol.
const fgHolderPkg = "github.com/dynalease/dynalease/lock/internal/holder"

// fgDDBTestAccessKey is the access key ddbtest.Client signs with.
const fgDDBTestAccessKey = "ddbtest"

// fgBuildHolder builds the holder program into a temporary directory.
func fgBuildHolder(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "holder")
	if err := testbin.Build(out, fgHolderPkg, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// fgChild is a running holder process.
type fgChild struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string

	mu     sync.Mutex
	stderr bytes.Buffer
}

func (c *fgChild) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.Write(p)
}

func (c *fgChild) errOutput() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func fgStartHolder(t *testing.T, bin string, args ...string) *fgChild {
	t.Helper()
	c := &fgChild{t: t, lines: make(chan string, 16)}
	c.cmd = exec.Command(bin, args...)
	// DynamoDB Local keeps tables per access key and region: the holder
	// must use ddbtest's to see this test's tables.
	c.cmd.Env = append(os.Environ(), ddbtest.EndpointEnv+"="+ddbtest.Endpoint(t),
		"AWS_ACCESS_KEY_ID="+fgDDBTestAccessKey, "AWS_REGION="+ddbtest.Region)
	c.cmd.Stderr = c
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting the holder: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		// Never leave a stopped process behind.
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	return c
}

// expect reads the holder's next line and fails unless it starts with
// prefix; it returns the rest.
func (c *fgChild) expect(prefix string) string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the holder ended without saying %q; stderr: %s", prefix, c.errOutput())
		}
		if !strings.HasPrefix(line, prefix) {
			c.t.Fatalf("the holder said %q, want %q…; stderr: %s", line, prefix, c.errOutput())
		}
		return strings.TrimPrefix(line, prefix)
	case <-time.After(fgPatient):
		c.t.Fatalf("the holder did not say %q within %v; stderr: %s", prefix, fgPatient, c.errOutput())
	}
	return ""
}

// next reads the holder's next line, whatever it is.
func (c *fgChild) next() string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the holder ended early; stderr: %s", c.errOutput())
		}
		return line
	case <-time.After(fgPatient):
		c.t.Fatalf("the holder said nothing within %v; stderr: %s", fgPatient, c.errOutput())
	}
	return ""
}

func (c *fgChild) send() {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		c.t.Fatalf("writing to the holder: %v", err)
	}
}

func (c *fgChild) signal(sig syscall.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("%v to the holder: %v", sig, err)
	}
}

// TestDynamoDBSIGSTOPPedHolderCannotCommit pauses a real lock holder, a
// separate process, with SIGSTOP; a client in this process takes the lock
// over after the holder's lease and makes its own guarded write; then the
// holder is continued and makes its guarded write of the same item. It
// must be refused, leaving the item as the new holder wrote it.
//
// Twice: stopped before its write (it then finds out by itself, from its
// own clock, that the lease is over), and stopped with the write already
// past the lock's own checks and its request on its way, which reaches
// DynamoDB only after the takeover: only the server's check can refuse it.
func TestDynamoDBSIGSTOPPedHolderCannotCommit(t *testing.T) {
	e := newFGEnv(t)
	bin := fgBuildHolder(t)
	// Long enough that the holder keeps its lock, on a busy machine too,
	// until the test stops it; the takeover waits it out.
	const childLease = 3 * time.Second
	for i, inflight := range []bool{false, true} {
		name := "stopped before its write"
		if inflight {
			name = "stopped with its write in flight"
		}
		t.Run(name, func(t *testing.T) {
			e := e.sub(t)
			key, item, owner := fmt.Sprintf("stopped-%d", i), fmt.Sprintf("item-%d", i), fmt.Sprintf("child-%d-%d", os.Getpid(), i)
			child := fgStartHolder(t, bin,
				"-table", e.locks, "-fences", e.fences, "-data", e.data,
				"-key", key, "-item", item, "-owner", owner,
				"-lease", childLease.String(), "-heartbeat", "500ms",
				"-inflight="+strconv.FormatBool(inflight))
			tokChild, err := strconv.ParseInt(child.expect("acquired "), 10, 64)
			if err != nil || tokChild <= 0 {
				t.Fatalf("the holder's token: %d, %v", tokChild, err)
			}
			if inflight {
				child.send()
				if held := child.expect("held "); held != "true" {
					t.Fatalf("the holder did not hold its lock before its write (held %s)", held)
				}
				child.expect("in-flight")
			}

			child.signal(syscall.SIGSTOP)
			b := e.newClient("b")
			began := time.Now()
			lb := b.mustAcquire(t, key)
			if took := time.Since(began); took < childLease {
				t.Fatalf("took the stopped holder's lock after %v, before its lease %v", took, childLease)
			}
			if lb.Token() <= tokChild {
				t.Fatalf("the new holder's token %#x is not above the stopped holder's %#x", lb.Token(), tokChild)
			}
			if err := lb.GuardItems(t.Context(), e.put(fgItem(item, b.Identity(), 1))); err != nil {
				t.Fatalf("the new holder's guarded write: %v", err)
			}
			child.signal(syscall.SIGCONT)
			child.send()

			if inflight {
				// DynamoDB itself refused the transaction (400: cancelled).
				if status := child.expect("answered "); status != "400" {
					t.Fatalf("the held-back transaction was answered %s, want 400 (cancelled)", status)
				}
			} else {
				t.Logf("the continued holder's IsHeld before its write: %s", child.expect("held "))
			}
			outcome := child.next()
			if !strings.HasPrefix(outcome, "refused: ") {
				t.Fatalf("the continued holder's guarded write: %q, want refused", outcome)
			}
			classes := child.expect("lost=")
			t.Logf("holder: %s; lost=%s", outcome, classes)
			if !strings.HasPrefix(classes, "true ") {
				t.Errorf("the refusal %q does not match dynalease.ErrLost", outcome)
			}
			e.wantItem("the item both wrote", item, b.Identity(), 1)
			if err := child.cmd.Wait(); err != nil {
				t.Errorf("the holder exited with %v; stderr: %s", err, child.errOutput())
			}
			if !lb.IsHeld() {
				t.Error("the new holder lost its lock")
			}
			if inflight && classes != "true guardlost=true" {
				t.Errorf("the server refused the transaction (nothing applied) but Guard returned %q, which does not match resourcelock.ErrGuardLost",
					strings.TrimPrefix(outcome, "refused: "))
			}
		})
	}
}
