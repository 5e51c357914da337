// Command inventory shows lost updates overselling a stock item, and a
// per-item lock preventing them.
//
// One item's stock is kept in a DynamoDB table. Many buyers sell it
// concurrently, each purchase a naive read-subtract-write: a GetItem of the
// stock, a short pause (payment, checks), and a PutItem of the stock minus
// the units sold, with no condition on the write. A purchase is refused when
// the stock read does not cover it.
//
// The buyers sell the same initial stock twice. The first run takes no
// lock: purchases that overlap read the same stock and the later write
// overwrites the earlier, so units are sold that never leave the stock, and
// more units are sold than there were. The report prints that discrepancy.
// The second run makes every purchase under the item's lock, key
// "item-<id>", each buyer with a lock client of its own (a separate owner,
// as separate processes would be): the final stock is then exactly the
// initial stock minus the units sold, never negative, with nothing
// oversold.
//
// The program exits with status 1 only if the locked run is wrong (or
// cannot run). The anomaly of the unlocked run is the point of the
// demonstration, but it is a race: if a run happens not to show it, the
// report says so and the program still succeeds.
//
// With DYNAMODB_ENDPOINT set (for example http://127.0.0.1:8000, DynamoDB
// Local) it talks to that server; otherwise to Amazon DynamoDB with the
// usual AWS configuration. It creates two tables whose names start with
// -prefix and a random run id, and deletes them at the end unless
// -keep-tables is given. From the repository:
//
//	scripts/dynamodb-local.sh run -- go run ./examples/inventory
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

	"github.com/dynalease/dynalease/examples/internal/ddbclient"
	"github.com/dynalease/dynalease/resourcelock"
)

func main() {
	var s settings
	flag.StringVar(&s.Item, "item", "widget", "id of the stock item")
	flag.Int64Var(&s.Stock, "stock", 40, "units in stock at the start of each run")
	flag.IntVar(&s.Buyers, "buyers", 8, "number of concurrent buyers")
	flag.IntVar(&s.Purchases, "purchases", 6, "purchases each buyer tries")
	flag.Int64Var(&s.MaxUnits, "max-units", 3, "a purchase is of 1 to this many units")
	flag.DurationVar(&s.Think, "think", 5*time.Millisecond, "pause between reading the stock and writing it back")
	flag.DurationVar(&s.Lease, "lease", 5*time.Second, "lease of the item's lock")
	flag.DurationVar(&s.Heartbeat, "heartbeat", time.Second, "heartbeat period of every lock client")
	flag.DurationVar(&s.Refresh, "refresh", 25*time.Millisecond, "how often a waiting buyer polls the held lock")
	prefix := flag.String("prefix", "inventory", "prefix of the names of the tables this run creates")
	keep := flag.Bool("keep-tables", false, "do not delete the tables at the end")
	flag.Parse()
	if s.Item == "" || s.Stock < 0 || s.Buyers < 1 || s.Purchases < 0 || s.MaxUnits < 1 {
		fmt.Fprintln(os.Stderr, "inventory: -item must be set, -buyers and -max-units positive, -stock and -purchases not negative")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := demo(ctx, os.Stdout, s, *prefix, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "inventory:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// demo creates the tables, makes both runs, prints their reports and
// deletes the tables. It reports whether the locked run was exact.
func demo(ctx context.Context, out io.Writer, s settings, prefix string, keep bool) (ok bool, err error) {
	db, err := ddbclient.New(ctx)
	if err != nil {
		return false, err
	}
	s.RunID = runID()
	base := prefix + "-" + s.RunID
	t := tables{Locks: base + "-locks", Stock: base + "-stock"}

	tctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := resourcelock.CreateTable(tctx, db, t.Locks, resourcelock.TableOptions{}); err != nil {
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
	if err := ddbclient.CreateTable(tctx, db, t.Stock, attrID); err != nil {
		return false, err
	}
	created = append(created, t.Stock)

	fmt.Fprintf(out, "inventory: %d buyers × %d purchases of 1–%d units of %q, %d in stock; %v between read and write\n",
		s.Buyers, s.Purchases, s.MaxUnits, s.Item, s.Stock, s.Think)
	fmt.Fprintf(out, "tables: %s, %s\n", t.Locks, t.Stock)

	sh := &shop{db: db, table: t.Stock, item: s.Item, think: s.Think}
	unlocked, err := runUnlocked(ctx, sh, s)
	if err != nil {
		return false, fmt.Errorf("unlocked run: %w", err)
	}
	fmt.Fprintf(out, "\nrun 1: WITHOUT a lock\n")
	printResult(out, unlocked)

	locked, err := runLocked(ctx, sh, t.Locks, s)
	if err != nil {
		return false, fmt.Errorf("locked run: %w", err)
	}
	fmt.Fprintf(out, "\nrun 2: WITH the lock %q around each read-subtract-write (lease %v, refresh %v)\n",
		lockKey(s.Item), s.Lease, s.Refresh)
	printResult(out, locked)

	fmt.Fprintln(out)
	switch {
	case !locked.Exact():
		fmt.Fprintln(out, "FAIL: the locked run did not keep the stock exact.")
	case unlocked.Exact():
		fmt.Fprintln(out, "OK: the locked run kept the stock exact. The unlocked run happened to show no anomaly this time;"+
			" more buyers or a longer -think make one likelier.")
	default:
		fmt.Fprintln(out, "OK: without a lock, the naive read-subtract-write lost updates and sold stock it did not have;"+
			" with the lock, the stock is exact.")
	}
	return locked.Exact(), nil
}

// printResult writes the report of one run.
func printResult(out io.Writer, r result) {
	fmt.Fprintf(out, "  purchases     %d tried: %d sold, %d refused for want of stock (%v)\n",
		r.Tried, r.Sales, r.Refused, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "  units sold    %d\n", r.Sold)
	fmt.Fprintf(out, "  stock         %d → %d: %d units removed\n", r.Initial, r.Final, r.Removed())
	if r.Locked {
		fmt.Fprintf(out, "  lock          %d acquisitions, %d found the lock held and waited (%v in all, longest %v)\n",
			r.Acquisitions, r.Waits, r.Waited.Round(time.Millisecond), r.LongestWait.Round(time.Millisecond))
	}
	if r.Exact() {
		fmt.Fprintf(out, "  exact         final stock %d = %d − %d sold; never negative, nothing oversold\n",
			r.Final, r.Initial, r.Sold)
		return
	}
	fmt.Fprintf(out, "  DISCREPANCY   final stock %d, but %d − %d sold = %d\n",
		r.Final, r.Initial, r.Sold, r.Initial-r.Sold)
	if n := r.Lost(); n > 0 {
		fmt.Fprintf(out, "  lost updates  %d units sold never left the stock\n", n)
	}
	if n := r.Oversold(); n > 0 {
		fmt.Fprintf(out, "  oversold      %d units sold beyond the %d there were\n", n, r.Initial)
	}
	if r.Final < 0 {
		fmt.Fprintf(out, "  negative      the stock ended below zero\n")
	}
}

// runID returns a short random id that keeps the table and owner names of
// concurrent runs apart.
func runID() string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return hex.EncodeToString(b[:])
}
