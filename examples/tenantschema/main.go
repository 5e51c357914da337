// Command tenantschema shows read-write locks: a tenant's schema that many
// workers read and a few migrate, kept consistent without making the
// readers wait for each other.
//
// The schema is two items of a schemas table, the tenant's columns and its
// indexes, each with the schema's version. A migration writes the columns
// at the next version, pauses (the time a real migration takes between the
// two), then writes the indexes: two items, so a reader between the writes
// would see a torn schema, columns of one version and indexes of another.
// So a migration runs under the tenant's lock taken exclusively (Acquire),
// and a read of both items under a shared hold of it (AcquireShared): any
// number of readers at once, never with a migration. A migration that
// waits holds new readers back, so migrations are never starved.
//
// Every migration also stores its fencing token in both items; a reader's
// token is the token of the last migration it follows, so a reader that
// finds a token above its own in the items read data newer than its hold
// allows, which must not happen.
//
// At the end it prints the reads and migrations, the torn reads and the
// reads that saw a newer token (both must be 0), and the most readers that
// held at once, and exits with status 1 if any read was wrong.
//
// With DYNAMODB_ENDPOINT set (for example http://127.0.0.1:8000, DynamoDB
// Local) it talks to that server; otherwise to Amazon DynamoDB with the
// usual AWS configuration. It creates three tables whose names start with
// -prefix and a random run id, and deletes them at the end unless
// -keep-tables is given. From the repository:
//
//	scripts/dynamodb-local.sh run -- go run ./examples/tenantschema
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/examples/internal/ddbclient"
)

func main() {
	var s settings
	flag.IntVar(&s.Workers, "workers", 8, "concurrent workers, each with its own lock client")
	flag.IntVar(&s.OpsPerWorker, "ops", 30, "reads and migrations each worker makes")
	flag.Float64Var(&s.MigrateShare, "migrate", 0.1, "share of a worker's operations that are migrations")
	flag.DurationVar(&s.Think, "think", 5*time.Millisecond, "pause of a migration between its two writes, and of a read between its two reads")
	flag.DurationVar(&s.Lease, "lease", 5*time.Second, "lease of every lock")
	flag.DurationVar(&s.Refresh, "refresh", 25*time.Millisecond, "how often a waiting worker polls a held lock")
	prefix := flag.String("prefix", "tenantschema", "prefix of the names of the tables this run creates")
	keep := flag.Bool("keep-tables", false, "do not delete the tables at the end")
	flag.Parse()
	if s.Workers < 1 || s.OpsPerWorker < 0 || s.MigrateShare < 0 || s.MigrateShare > 1 {
		fmt.Fprintln(os.Stderr, "tenantschema: -workers must be positive, -ops not negative, -migrate within [0, 1]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := demo(ctx, os.Stdout, s, *prefix, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tenantschema:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// demo creates the tables, runs the workers, prints the report and deletes
// the tables. It reports whether every read was right.
func demo(ctx context.Context, out io.Writer, s settings, prefix string, keep bool) (ok bool, err error) {
	db, err := ddbclient.New(ctx)
	if err != nil {
		return false, err
	}
	s.RunID = runID()
	base := prefix + "-" + s.RunID
	t := tables{Locks: base + "-locks", Fence: base + "-fence", Schemas: base + "-schemas"}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var created []string
	defer func() {
		if keep {
			fmt.Fprintf(out, "\ntables kept: %v\n", created)
			return
		}
		for _, name := range created {
			if derr := ddbclient.DeleteTable(context.WithoutCancel(ctx), db, name); derr != nil && err == nil {
				err = derr
			}
		}
	}()
	for _, name := range []string{t.Locks, t.Fence} {
		if err := dynamodbstore.CreateTable(tctx, db, name, dynamodbstore.TableOptions{}); err != nil {
			return false, err
		}
		created = append(created, name)
	}
	if err := ddbclient.CreateTable(tctx, db, t.Schemas, attrID); err != nil {
		return false, err
	}
	created = append(created, t.Schemas)
	fmt.Fprintf(out, "tenantschema: %d workers × %d operations, %.0f%% migrations; lease %v, refresh %v, %v between the two items\n\n",
		s.Workers, s.OpsPerWorker, s.MigrateShare*100, s.Lease, s.Refresh, s.Think)
	rep, err := run(ctx, db, t, s)
	if err != nil {
		return false, err
	}
	printReport(out, rep)
	return rep.OK(), nil
}

// printReport writes the counts and the verdict.
func printReport(out io.Writer, r report) {
	fmt.Fprintf(out, "reads          %d (the most readers at once: %d)\n", r.Reads, r.MostReaders)
	fmt.Fprintf(out, "migrations     %d (the schema is at version %d)\n", r.Migrations, r.Version)
	fmt.Fprintf(out, "torn reads     %d (columns and indexes of different versions)\n", r.Torn)
	fmt.Fprintf(out, "newer tokens   %d (items written by a migration later than the reader's token)\n", r.Newer)
	if !r.OK() {
		fmt.Fprintf(out, "FAIL: %d wrong reads in %v\n", r.Torn+r.Newer, r.Elapsed.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(out, "OK: %d reads and %d migrations in %v; every read saw one version, and no data newer than its token.\n",
		r.Reads, r.Migrations, r.Elapsed.Round(time.Millisecond))
}

// runID returns a short random id that keeps the names of concurrent runs
// apart.
func runID() string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b[:])
}
