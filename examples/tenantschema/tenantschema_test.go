package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
)

// TestRun runs readers and migrations against DynamoDB and checks the
// example's invariant: no read sees a torn schema or data newer than its
// token; and the run shows readers together.
func TestRun(t *testing.T) {
	db := ddbtest.Client(t)
	tb := tables{
		Locks:   ddbtest.NewTable(t, db, ddbtest.TableSpec{}),
		Fence:   ddbtest.NewTable(t, db, ddbtest.TableSpec{}),
		Schemas: ddbtest.NewTable(t, db, ddbtest.TableSpec{PartitionKey: attrID}),
	}
	s := settings{Workers: 6, OpsPerWorker: 12, MigrateShare: 0.2, Think: 5 * time.Millisecond,
		Lease: 5 * time.Second, Refresh: 20 * time.Millisecond, RunID: runID()}
	rep, err := run(t.Context(), db, tb, s)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printReport(&out, rep)
	t.Log("\n" + out.String())
	if !rep.OK() {
		t.Errorf("%d torn reads, %d reads of newer data", rep.Torn, rep.Newer)
	}
	if rep.Reads+rep.Migrations != int64(s.Workers*s.OpsPerWorker) || rep.Version != rep.Migrations {
		t.Errorf("%d reads and %d migrations, version %d; want %d operations and the version at the migrations", rep.Reads, rep.Migrations, rep.Version, s.Workers*s.OpsPerWorker)
	}
}
