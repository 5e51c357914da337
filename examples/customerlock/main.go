// Command customerlock shows per-customer locks serializing changes that
// span two DynamoDB tables, the case of a retail bank.
//
// Each customer has a record in an accounts table (a balance, in cents) and
// one in a profiles table (a counter of changes). Several workers apply many
// small changes concurrently: a deposit of a random amount to a random
// customer, made as a plain read-modify-write of both records (GetItem each,
// then PutItem each, without conditions, as a service that loads a customer,
// changes it in memory and saves it would do). Two changes to one customer
// that overlapped would lose one of them, so each change runs under the
// customer's lock, key "customer-<id>". Every worker has a lock client of its
// own, a separate owner as separate processes would be; there are many
// changes and few customers, so workers really do wait for each other.
//
// At the end it reads both tables back and checks, for every customer, that
// the balance equals the sum of the deposits the workers applied to it and
// that the counter equals the number of those changes. It prints one line
// per customer and the lock statistics of each worker (acquisitions, how
// many of them found the lock held and waited, and for how long), and exits
// with status 1 if any customer's records are wrong.
//
// With DYNAMODB_ENDPOINT set (for example http://127.0.0.1:8000, DynamoDB
// Local) it talks to that server; otherwise to Amazon DynamoDB with the
// usual AWS configuration. It creates three tables whose names start with
// -prefix and a random run id, and deletes them at the end unless
// -keep-tables is given. From the repository:
//
//	scripts/dynamodb-local.sh run -- go run ./examples/customerlock
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
	"text/tabwriter"
	"time"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/examples/internal/ddbclient"
)

func main() {
	var s settings
	flag.IntVar(&s.Customers, "customers", 3, "number of customers")
	flag.IntVar(&s.Workers, "workers", 6, "number of concurrent workers, each with its own lock client")
	flag.IntVar(&s.ChangesPerWorker, "changes", 40, "changes each worker applies")
	flag.Int64Var(&s.MaxDeposit, "max-deposit", 10000, "largest deposit, in cents")
	flag.DurationVar(&s.Think, "think", 2*time.Millisecond, "pause between reading a customer's records and writing them")
	flag.DurationVar(&s.Lease, "lease", 5*time.Second, "lease of every lock")
	flag.DurationVar(&s.Heartbeat, "heartbeat", time.Second, "heartbeat period of every lock client")
	flag.DurationVar(&s.Refresh, "refresh", 25*time.Millisecond, "how often a waiting worker polls a held lock")
	prefix := flag.String("prefix", "customerlock", "prefix of the names of the tables this run creates")
	keep := flag.Bool("keep-tables", false, "do not delete the tables at the end")
	flag.Parse()
	if s.Customers < 1 || s.Workers < 1 || s.ChangesPerWorker < 0 || s.MaxDeposit < 1 {
		fmt.Fprintln(os.Stderr, "customerlock: -customers, -workers and -max-deposit must be positive, -changes not negative")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := demo(ctx, os.Stdout, s, *prefix, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "customerlock:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// demo creates the tables, runs the workers, prints the report and deletes
// the tables. It reports whether every customer's records were right.
func demo(ctx context.Context, out io.Writer, s settings, prefix string, keep bool) (ok bool, err error) {
	db, err := ddbclient.New(ctx)
	if err != nil {
		return false, err
	}
	s.RunID = runID()
	base := prefix + "-" + s.RunID
	t := tables{Locks: base + "-locks", Accounts: base + "-accounts", Profiles: base + "-profiles"}

	tctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := dynamodbstore.CreateTable(tctx, db, t.Locks, dynamodbstore.TableOptions{}); err != nil {
		return false, err
	}
	created := []string{t.Locks}
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
	for _, name := range []string{t.Accounts, t.Profiles} {
		if err := ddbclient.CreateTable(tctx, db, name, attrID); err != nil {
			return false, err
		}
		created = append(created, name)
	}

	fmt.Fprintf(out, "customerlock: %d workers × %d changes on %d customers; lease %v, refresh %v, %v between read and write\n",
		s.Workers, s.ChangesPerWorker, s.Customers, s.Lease, s.Refresh, s.Think)
	fmt.Fprintf(out, "tables: %s, %s, %s\n\n", t.Locks, t.Accounts, t.Profiles)
	rep, err := run(ctx, db, t, s)
	if err != nil {
		return false, err
	}
	printReport(out, rep)
	return rep.OK(), nil
}

// printReport writes the per-customer results, the lock statistics and the
// verdict.
func printReport(out io.Writer, rep report) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "customer\tbalance\tdeposits\tcounter\tchanges\tlock acquisitions\tresult\t")
	changes, bad, acqMismatch := 0, 0, 0
	for _, c := range rep.Customers {
		verdict := "ok"
		if !c.OK() {
			verdict = "WRONG"
			bad++
		}
		if c.Acquisitions != int64(c.Changes) {
			acqMismatch++
		}
		changes += c.Changes
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t\n",
			c.ID, money(c.Balance), money(c.Deposits), c.Counter, c.Changes, c.Acquisitions, verdict)
	}
	tw.Flush()

	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "worker\tchanges\tacquisitions\twaited\tretries\ttime waiting\tlongest wait\t")
	var total workerStats
	for _, w := range rep.Workers {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%v\t%v\t\n", w.Name, w.Changes, w.Acquisitions, w.Waits, w.Retries,
			w.Waited.Round(time.Millisecond), w.LongestWait.Round(time.Millisecond))
		total.Changes += w.Changes
		total.Acquisitions += w.Acquisitions
		total.Waits += w.Waits
		total.Retries += w.Retries
		total.Waited += w.Waited
		total.LongestWait = max(total.LongestWait, w.LongestWait)
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t%d\t%d\t%v\t%v\t\n", total.Changes, total.Acquisitions, total.Waits, total.Retries,
		total.Waited.Round(time.Millisecond), total.LongestWait.Round(time.Millisecond))
	tw.Flush()

	fmt.Fprintf(out, "\n%d of %d acquisitions found the customer's lock held by another worker and waited for it.\n",
		total.Waits, total.Acquisitions)
	if acqMismatch > 0 {
		fmt.Fprintf(out, "note: for %d customers the acquisitions counted in the lock row differ from the changes applied.\n", acqMismatch)
	}
	if bad > 0 {
		fmt.Fprintf(out, "FAIL: %d of %d customers have records that do not match the changes applied (%d changes in %v).\n",
			bad, len(rep.Customers), changes, rep.Elapsed.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(out, "OK: %d changes in %v; every balance equals the deposits applied to it and every counter the number of changes.\n",
		changes, rep.Elapsed.Round(time.Millisecond))
}

// money formats cents as units and hundredths.
func money(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

// runID returns a short random id that keeps the table and owner names of
// concurrent runs apart.
func runID() string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b[:])
}
