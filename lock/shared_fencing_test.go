package lock

import (
	"context"
	"testing"
	"time"
)

// A reader that takes a key over from a silent writer gets a token above
// the writer's: a fenced resource refuses the paused writer's late write
// once the reader has presented its token. A reader that joins readers
// already holding shares their token.
func TestAReaderThatTakesAWritersKeyHasATokenAboveTheWriters(t *testing.T) {
	f := newFixture(t, WithFencing("fences")) // heartbeats on, as users get
	writer, err := NewFromStore(f.store, WithClock(f.fc), WithOwnerName("writer"), WithLeaseDuration(lease),
		WithHeartbeatPeriod(0), WithRefreshPeriod(refresh), WithFencing("fences"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = writer.Close(context.Background()) })
	w, err := writer.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	paused := w.Token() // the writer pauses: it never renews again
	if paused == 0 {
		t.Fatal("the writer has no token")
	}

	locks, errs := make(chan *Lock, 1), make(chan error, 1)
	go func() {
		l, err := f.c.AcquireShared(context.Background(), "k")
		if err != nil {
			errs <- err
			return
		}
		locks <- l
	}()
	f.waitIdle("acquire")
	start := f.now()
	var r *Lock
	for r == nil {
		f.fc.Step(maxPoll)
		select {
		case <-f.idle:
			if f.now().Sub(start) > lease+2*maxPoll {
				t.Fatal("the silent writer was never taken over")
			}
		case r = <-locks:
		case err := <-errs:
			t.Fatalf("AcquireShared: %v", err)
		case <-time.After(patience):
			t.Fatal("AcquireShared neither waited nor returned")
		}
	}
	if r.Token() <= paused {
		t.Fatalf("the reader's token %x after taking the key from the writer, want above the writer's %x", r.Token(), paused)
	}
	joined := mustShared(t, f.c, "k")
	if joined.Token() != r.Token() {
		t.Fatalf("a reader that joined the readers has token %x, want theirs %x", joined.Token(), r.Token())
	}
}

// A reader that begins a hold on a missing row (a writer deleted it on
// release) gives the hold a fencing generation: its token is above the
// writer's, not 0.
func TestAReaderThatBeginsOnAMissingRowHasAToken(t *testing.T) {
	f := newFixture(t, WithFencing("fences"), WithHeartbeatPeriod(0))
	w, err := f.c.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	written := w.Token()
	if err := w.Release(context.Background(), ReleaseDelete(true)); err != nil {
		t.Fatal(err)
	}
	r := mustShared(t, f.c, "k")
	if r.Token() <= written {
		t.Fatalf("a reader's token after the writer deleted the row: %x, want above the writer's %x", r.Token(), written)
	}
}
