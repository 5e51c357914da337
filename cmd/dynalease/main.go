// Command dynalease runs a command only while it holds a lock on DynamoDB,
// and inspects and manages the lock table. See "dynalease --help".
//
// Exit codes (also in --help):
//
//	the child's own   run: the command ran and exited with this code
//	1                 get, release: no such lock
//	64                usage error (unknown flag, missing command)
//	69                DynamoDB unreachable, or the table missing or of another schema
//	73                the lock was not acquired (held by another owner; --no-wait or --wait ran out)
//	74                the lock was lost while the command ran; the command was stopped
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Exit codes other than the child's own.
const (
	exitUsage       = 64
	exitUnavailable = 69
	exitNotAcquired = 73
	exitLost        = 74
)

// exitError carries the process's exit code with the one line to print.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exit(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	os.Exit(execute(os.Args[1:]))
}

// execute runs the command line args and returns the exit code, printing
// one line on stderr for an error (never a stack trace).
func execute(args []string) int {
	if err := otelURLApart(args); err != nil {
		fmt.Fprintln(os.Stderr, "dynalease:", err)
		return exitUsage
	}
	c := &common{}
	root := c.root()
	root.SetArgs(args)
	err := root.ExecuteContext(contextFromEnv(context.Background()))
	c.tel.close() // before the exit; a command that must exit at once (exitNow) sends nothing more
	if err == nil {
		return 0
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.err != nil {
		fmt.Fprintln(os.Stderr, "dynalease:", err) // cobra's own errors are usage errors
	}
	return codeOf(err)
}

// codeOf returns the exit code an error of a command means: an exitError's
// own, 0 for nil, and the usage code for any other (cobra's, about flags
// and arguments).
func codeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		return exitUsage
	}
}
