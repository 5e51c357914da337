// Command chaos checks dynalease's guarantees the way Jepsen checks a
// database's: five worker processes, each with an Elector and a lock client
// behind its own fault-injecting proxy to DynamoDB Local, while a nemesis
// pauses, kills, partitions, throttles and delays them; then a checker reads
// their logs and the tables and reports every breach of a guarantee.
//
//	scripts/dynamodb-local.sh run -- go run ./chaos run [flags]
//
// make chaos runs it for CHAOS_MINUTES (10) with both duration sets; see
// docs/testing.md. The same binary is the
// worker ("chaos worker ...", started by the controller).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chaos run [flags] | chaos worker [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "worker":
		if err := runWorker(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "chaos worker:", err)
			os.Exit(1)
		}
	case "run":
		os.Exit(runMain(os.Args[2:]))
	default:
		fmt.Fprintf(os.Stderr, "chaos: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// runMain runs the controller and returns the exit code: 0 when no safety
// check failed, 1 when one did, 2 when the run itself failed.
func runMain(args []string) int {
	var cfg runConfig
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	cfg.flags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.endpoint = os.Getenv("DYNAMODB_ENDPOINT")
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	cfg.bin = bin
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	r.print(os.Stdout)
	if err := r.writeJSON(filepath.Join(r.Config["dir"], "results.json")); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
	}
	if !r.Safe() {
		return 1
	}
	return 0
}
