package lock

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/faulty"
)

// Review issue, bug 3: heartbeat H1 lands, and both its answer and the
// read that would settle it are lost. The next Heartbeat, with new data,
// is conditioned on the old RVN and fails its condition; finding H1 in the
// row must not make it report done with its own data never written. It
// confirms H1 and writes again on top of it.
func TestSetDataIsWrittenOverAnEarlierHeartbeatThatLandedUnseen(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	l := f.acquire("k", WithData([]byte("old")))
	f.store.ResetCalls()
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Land: true, Err: errReset})
	f.store.Inject(faulty.OpGet, 1, faulty.Fault{Err: errReset})
	if err := l.Heartbeat(context.Background()); err == nil {
		t.Fatal("a heartbeat whose answer and read were lost reported success")
	}
	h1 := f.item("k").RVN
	if h1 == l.RVN() {
		t.Fatal("the first heartbeat did not land")
	}
	if err := l.SetData(context.Background(), []byte("new")); err != nil {
		t.Fatalf("SetData(new data) = %v", err)
	}
	row := f.item("k")
	if !bytes.Equal(row.Data, []byte("new")) || row.RVN == h1 || row.RVN != l.RVN() {
		t.Fatalf("row data %q RVN %s (H1 %s, lock %s): the heartbeat's own write is not in the row", row.Data, row.RVN, h1, l.RVN())
	}
	if !bytes.Equal(l.Data(), []byte("new")) {
		t.Fatalf("Lock.Data = %q", l.Data())
	}
}

// Review issue, bug 3 (Acquire): a create left in doubt by an earlier,
// cancelled Acquire landed and could not be released. A later Acquire of
// the same client recognises that row as its own, but writes its own data
// and attributes over it before returning it.
func TestAcquireWritesItsOwnDataOverARowAnEarlierCallLeft(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	block, entered := make(chan struct{}), make(chan faulty.Op, 10)
	f.store.OnCall(func(op faulty.Op) { entered <- op })
	f.store.Inject(faulty.OpCreate, 1, faulty.Fault{Block: block, Land: true}) // lands when cancelled
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errReset})            // the orphan's release fails
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := f.c.Acquire(ctx, "k", WithData([]byte("first")))
		errs <- err
	}()
	<-entered
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	f.store.OnCall(nil)
	attrs := map[string]any{"tenant": &types.AttributeValueMemberS{Value: "t2"}}
	l, err := f.c.TryAcquire(context.Background(), "k", WithData([]byte("second")), WithAttributes(attrs))
	if err != nil {
		t.Fatalf("TryAcquire over the row the cancelled call left = %v", err)
	}
	row := f.item("k")
	if !bytes.Equal(row.Data, []byte("second")) || !bytes.Equal(l.Data(), []byte("second")) {
		t.Fatalf("row data %q, lock data %q: want this call's data", row.Data, l.Data())
	}
	if v, ok := row.Attributes["tenant"].(*types.AttributeValueMemberS); !ok || v.Value != "t2" {
		t.Fatalf("row attributes %v: want this call's", row.Attributes)
	}
}

// Review issue, bug 13: a release whose answer was lost, with the row
// deleted (or released) by it and then taken by someone else before the
// settling read, is a release that succeeded as far as anyone can tell:
// Release returns nil, not a LostError that would suggest the lock had
// been stolen while held.
func TestReleaseWhoseAnswerWasLostBeforeAnotherOwnerTookTheRowSucceeds(t *testing.T) {
	for _, del := range []bool{true, false} {
		name := "mark released"
		if del {
			name = "delete"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, WithHeartbeatPeriod(0))
			f.freeRun()
			l := f.acquire("k")
			op := faulty.OpUpdate
			if del {
				op = faulty.OpRemove
			}
			f.store.Inject(op, 1, faulty.Fault{Land: true, Err: errReset})
			f.store.OnCall(func(op faulty.Op) {
				if op == faulty.OpGet { // the settling read: someone took the freed row first
					f.putForeign("k", "next", "their-rvn", lease)
				}
			})
			if err := l.Release(context.Background(), ReleaseDelete(del)); err != nil {
				t.Fatalf("Release = %v, want nil", err)
			}
			if !errors.Is(l.Err(), ErrNotHeld) {
				t.Fatalf("Lock.Err = %v, want ErrNotHeld", l.Err())
			}
			if row := f.item("k"); row.HolderIdentity != "next" {
				t.Fatalf("row %+v", row.Record)
			}
		})
	}
}

// Found in review: a heartbeat whose write landed but whose answer came
// back only after the lock's validity had passed ends the lock (it never
// resumes), yet records the row it wrote, so that the release of the
// expired lock is conditioned on that RVN and hands the lock over, instead
// of failing against the old RVN and leaving the row held for a lease.
func TestReleaseAfterALateHeartbeatIsConditionedOnTheRowItWrote(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	l := f.acquire("k")
	block, entered := make(chan struct{}), make(chan faulty.Op, 10)
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Block: block, Land: true})
	f.store.OnCall(func(op faulty.Op) { entered <- op })
	beat := make(chan error, 1)
	go func() { beat <- l.Heartbeat(context.Background()) }()
	<-entered
	f.store.OnCall(nil)
	f.fc.Step(validity) // the answer is late: the lock's validity passes meanwhile
	var lost *dynalease.LostError
	if err := <-beat; !errors.As(err, &lost) || lost.Reason != dynalease.Expired {
		t.Fatalf("late heartbeat = %v, want dynalease.Expired", err)
	}
	close(block)
	if err := l.Release(context.Background()); !errors.As(err, &lost) || lost.Reason != dynalease.Expired {
		t.Fatalf("Release = %v, want the dynalease.Expired LostError", err)
	}
	if row := f.item("k"); !row.Released {
		t.Fatalf("row %+v left held after the release of the expired lock", row.Record)
	}
	if !errors.As(l.Err(), &lost) || lost.Reason != dynalease.Expired {
		t.Fatalf("Err = %v, want dynalease.Expired still", l.Err())
	}
}

// Found in review: a release whose answer was lost, finding the row still
// at its RVN but marked released by someone else (a forced release keeps
// the RVN), is a loss that came before the release, not a release done.
func TestReleaseWhoseAnswerWasLostAfterAForcedReleaseReportsIt(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	f.freeRun()
	l := f.acquire("k")
	row := f.item("k")
	row.Released = true // an operator's release --force
	rows.MustRaw(f.mem).PutItem(row)
	f.store.Inject(faulty.OpUpdate, 1, faulty.Fault{Err: errReset})
	err := l.Release(context.Background())
	var lost *dynalease.LostError
	if !errors.As(err, &lost) || lost.Reason != dynalease.ReleasedElsewhere {
		t.Fatalf("Release = %v, want dynalease.ReleasedElsewhere", err)
	}
}
