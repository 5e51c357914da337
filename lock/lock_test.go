package lock

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
)

func TestHeartbeatsKeepTheRowsAcquireTimeDataAndAttributes(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	attrs := map[string]any{"team": &types.AttributeValueMemberS{Value: "blue"}}
	l := f.acquire("k", WithData([]byte("v1")), WithAttributes(attrs))
	first := f.item("k")
	f.fc.Step(period)
	if err := l.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	row := f.item("k")
	if row.RVN == first.RVN || row.RVN != l.RVN() {
		t.Fatalf("RVN %q after a heartbeat over %q, the lock says %q", row.RVN, first.RVN, l.RVN())
	}
	if row.AcquireTime != first.AcquireTime || row.AcquisitionID != first.AcquisitionID || !row.RenewTime.After(first.RenewTime) {
		t.Fatalf("a heartbeat changed the acquisition: %+v, then %+v", first.Record, row.Record)
	}
	if string(row.Data) != "v1" || string(l.Data()) != "v1" {
		t.Fatalf("data %q in the row, %q in the lock", row.Data, l.Data())
	}
	if got, ok := l.Attributes()["team"].(*types.AttributeValueMemberS); !ok || got.Value != "blue" || row.Attributes["team"] == nil {
		t.Fatalf("attributes %v in the lock, %v in the row", l.Attributes(), row.Attributes)
	}
}

func TestALockThatRanOutUnwatchedEndsAndItsDoneAndContextSaySo(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	l := f.acquire("k")
	f.fc.Step(validity)
	// Nobody called Done, Context or IsHeld: the client's timer ends the
	// lock all the same, and lets go of its key.
	eventually(t, "the lock ended by its timer", func() bool { return l.Err() != nil })
	var lost *dynalease.LostError
	if !errors.As(l.Err(), &lost) || lost.Reason != dynalease.Expired {
		t.Fatalf("Err = %v", l.Err())
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done of an ended lock is open")
	}
	ctx, cancel := l.Context(context.Background())
	defer cancel()
	<-ctx.Done()
	if !errors.As(context.Cause(ctx), &lost) {
		t.Fatalf("context cause %v", context.Cause(ctx))
	}
	// The key is no longer this client's to wait for in process: a
	// TryAcquire asks the row (which still names this owner, at an RVN
	// that must be waited out).
	eventually(t, "the key let go", func() bool {
		f.store.ResetCalls()
		_, err := f.c.TryAcquire(context.Background(), "k")
		return errors.Is(err, ErrLocked) && len(f.ops()) > 0
	})
}

func TestDoneAndContextOfAReleasedLock(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	early := f.acquire("early")
	done := early.Done()
	ctx, cancel := early.Context(context.Background())
	defer cancel()
	late := f.acquire("late")
	for _, l := range []*Lock{early, late} {
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for name, ch := range map[string]<-chan struct{}{"Done asked before": done, "Done asked after": late.Done()} {
		select {
		case <-ch:
		default:
			t.Fatalf("%s the release is open", name)
		}
	}
	<-ctx.Done() // cancelled by a goroutine of its own
	lctx, lcancel := late.Context(context.Background())
	defer lcancel()
	<-lctx.Done()
	if !errors.Is(context.Cause(ctx), ErrNotHeld) || !errors.Is(context.Cause(lctx), ErrNotHeld) {
		t.Fatalf("context causes %v, %v", context.Cause(ctx), context.Cause(lctx))
	}
}

func TestWritesOfOneLockWaitForEachOtherOrTheirContext(t *testing.T) {
	f := newFixture(t, WithHeartbeatPeriod(0))
	l := f.acquire("k")
	if err := l.startWrite(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error)
	go func() { waited <- l.startWrite(ctx) }()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("a write waiting for the slot, its context cancelled: %v", err)
	}
	go func() { waited <- l.startWrite(context.Background()) }()
	l.endWrite()
	if err := <-waited; err != nil {
		t.Fatalf("a write waiting for the slot: %v", err)
	}
	l.endWrite()
	if err := l.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
}
