//go:build dynalease_testhook

package main

import (
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
)

// Test hooks, compiled only into the binary the command's tests build with
// -tags dynalease_testhook. Each puts the process in a state that a test
// cannot reach reliably from outside; a normal build has none of them
// (testhook_off.go).

// pauseBeforeStart stops this process with SIGSTOP when
// DYNALEASE_TESTHOOK_STOP_BEFORE_START is set: a pause between winning a
// lock or term and starting the command. The test continues it with
// SIGCONT. A SIGSTOP a process sends itself may take effect only after the
// calling thread has gone on (another thread takes the stop), so the hook
// returns only once SIGCONT has arrived.
func pauseBeforeStart() {
	if os.Getenv("DYNALEASE_TESTHOOK_STOP_BEFORE_START") == "" {
		return
	}
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	<-cont
}

// groupGoneWait shortens the wait for a killed group to
// DYNALEASE_TESTHOOK_GROUP_WAIT when set.
func groupGoneWait() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("DYNALEASE_TESTHOOK_GROUP_WAIT")); err == nil {
		return d
	}
	return defaultGroupGoneWait
}

// groupNeverGone makes every killed group look alive when
// DYNALEASE_TESTHOOK_GROUP_NEVER_GONE is set: a member stuck in the kernel
// (uninterruptible sleep) that SIGKILL cannot end.
func groupNeverGone() bool { return os.Getenv("DYNALEASE_TESTHOOK_GROUP_NEVER_GONE") != "" }

// describeTableHook answers DescribeTable with the JSON body in
// DYNALEASE_TESTHOOK_DESCRIBE_TABLE when it is set, as Amazon DynamoDB
// describes a global table (DynamoDB Local has none); every other request
// goes to the endpoint.
func describeTableHook() http.RoundTripper {
	body := os.Getenv("DYNALEASE_TESTHOOK_DESCRIBE_TABLE")
	if body == "" {
		return nil
	}
	ft := faulthttp.New(nil)
	ft.Add(faulthttp.Rule{Op: "DescribeTable", Fault: faulthttp.Status(http.StatusOK, body)})
	return ft
}
