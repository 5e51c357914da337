package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
)

// opCount is row 2's result for one library operation.
type opCount struct {
	Operation     string           `json:"operation"`
	Samples       int              `json:"samples"`
	RequestsPerOp float64          `json:"requests_per_operation"`
	MinRequests   int64            `json:"min_requests"`
	MaxRequests   int64            `json:"max_requests"`
	ByOp          map[string]int64 `json:"requests_by_dynamodb_operation"`
	Target        float64          `json:"target_requests,omitempty"`
	MeetsTarget   *bool            `json:"meets_target,omitempty"`
	Note          string           `json:"note,omitempty"`
}

// opAcc accumulates the request counts of one operation's samples.
type opAcc struct {
	name   string
	target float64
	note   string
	counts []int64
	byOp   map[string]int64
}

func (a *opAcc) add(n int64, byOp map[string]int64) {
	a.counts = append(a.counts, n)
	if a.byOp == nil {
		a.byOp = map[string]int64{}
	}
	for k, v := range byOp {
		a.byOp[k] += v
	}
}

func (a *opAcc) addSnapshot(d snapshot) { a.add(total(d.attempts), d.attempts) }

func (a *opAcc) result() opCount {
	oc := opCount{Operation: a.name, Samples: len(a.counts), ByOp: a.byOp, Target: a.target, Note: a.note}
	if len(a.counts) == 0 {
		return oc
	}
	var sum int64
	oc.MinRequests, oc.MaxRequests = a.counts[0], a.counts[0]
	for _, n := range a.counts {
		sum += n
		oc.MinRequests = min(oc.MinRequests, n)
		oc.MaxRequests = max(oc.MaxRequests, n)
	}
	oc.RequestsPerOp = round3(float64(sum) / float64(len(a.counts)))
	if a.target > 0 {
		ok := oc.RequestsPerOp <= a.target
		oc.MeetsTarget = &ok
	}
	return oc
}

// rowRequests is row 2: DynamoDB requests per library operation.
func (b *bench) rowRequests(ctx context.Context) error {
	table, err := b.table(ctx, "requests")
	if err != nil {
		return err
	}
	defer b.dropTable(table)

	accs := map[string]*opAcc{}
	var order []string
	acc := func(name string, target float64, note string) *opAcc {
		if a, ok := accs[name]; ok {
			return a
		}
		a := &opAcc{name: name, target: target, note: note}
		accs[name] = a
		order = append(order, name)
		return a
	}
	defer func() {
		for _, name := range order {
			b.res.RequestsPerOperation = append(b.res.RequestsPerOperation, accs[name].result())
		}
	}()

	// The lock client: default options (20 s lease, 5 s heartbeats), so no
	// background heartbeat falls inside these few milliseconds.
	ctr := newCounter()
	lc, err := newLocks(b.clients.client(ctr, nil), table, lock.Config{})
	if err != nil {
		return err
	}
	defer lc.Close(context.Background())
	otherCtr := newCounter()
	other, err := newLocks(b.clients.client(otherCtr, nil), table, lock.Config{})
	if err != nil {
		return err
	}
	defer other.Close(context.Background())

	b.progress("  lock operations, %d repetitions each", b.sc.OpReps)
	step := func(a *opAcc, f func() error) error {
		s := ctr.snapshot()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		a.addSnapshot(ctr.since(s))
		return nil
	}
	for i := 0; i < b.sc.OpReps; i++ {
		key := fmt.Sprintf("req-%s-%d", b.runID, i)
		var l *lock.Lock
		steps := []struct {
			a *opAcc
			f func() error
		}{
			{acc("lock: Acquire, uncontended, no row yet", 1, ""), func() (err error) { l, err = lc.Acquire(ctx, key); return err }},
			{acc("lock: Heartbeat (renew)", 1, ""), func() error { return l.Heartbeat(ctx) }},
			{acc("lock: Release (row kept, marked released)", 1, ""), func() error { return l.Release(ctx) }},
			{acc("lock: Acquire, uncontended, released row", 1, ""), func() (err error) { l, err = lc.Acquire(ctx, key); return err }},
			{acc("lock: Release with delete", 1, ""), func() error { return l.Release(ctx, lock.ReleaseDelete(true)) }},
		}
		for _, s := range steps {
			if err := step(s.a, s.f); err != nil {
				return err
			}
		}
		// TryAcquire of a lock another owner holds: the first call knows
		// nothing of the row, a second call has seen its RVN.
		held, err := other.Acquire(ctx, key)
		if err != nil {
			return fmt.Errorf("other owner's Acquire: %w", err)
		}
		for _, a := range []*opAcc{
			acc("lock: failed create (TryAcquire of a row another owner holds)", 1, "the refused create carries the row (ALL_OLD): no read"),
			acc("lock: TryAcquire, held by another owner (RVN already seen)", 0, "informational"),
		} {
			s := ctr.snapshot()
			if _, err := lc.TryAcquire(ctx, key); err == nil {
				return fmt.Errorf("%s: succeeded on a held lock", a.name)
			}
			a.addSnapshot(ctr.since(s))
		}
		if err := held.Release(ctx, lock.ReleaseDelete(true)); err != nil {
			return fmt.Errorf("other owner's Release: %w", err)
		}
	}

	if err := b.failedWrites(ctx, table, acc); err != nil {
		return err
	}

	b.progress("  election: %d repetitions of acquire, %.1f s of steady leadership with a polling candidate, release",
		b.sc.ElectionReps, b.sc.ElectionWindowS)
	for rep := 0; rep < b.sc.ElectionReps; rep++ {
		if err := b.electionRequests(ctx, table, rep, acc); err != nil {
			return err
		}
	}
	return nil
}

// roundGap is the longest gap between one request's answer and the next
// request that counts them as one round (no sleep between them).
const roundGap = 300 * time.Microsecond

// electionRequests measures one leader's acquisition, its renewals while a
// candidate polls, the candidate's polls and the leader's release.
func (b *bench) electionRequests(ctx context.Context, table string, rep int, acc func(string, float64, string) *opAcc) error {
	name := fmt.Sprintf("req-elect-%s-%d", b.runID, rep)
	lctr, cctr := newCounter(), newCounter()
	lctr.setLog(true)
	cctr.setLog(true)

	s := lctr.snapshot()
	leader, err := startCandidate(ctx, b.clients.client(lctr, nil), lctr, table, name, "leader", nil)
	if err != nil {
		return err
	}
	defer leader.stop()
	select {
	case <-leader.started:
	case <-time.After(electPatience):
		return fmt.Errorf("election: no leader within %v", electPatience)
	}
	acc("election: acquire, uncontended (Run until OnStartedLeading)", 1, "").addSnapshot(lctr.since(s))

	candStart := time.Now()
	cand, err := startCandidate(ctx, b.clients.client(cctr, nil), cctr, table, name, "candidate", nil)
	if err != nil {
		return err
	}
	time.Sleep(secs(b.sc.ElectionWindowS))
	candStop := time.Now()
	if err := cand.stop(); err != nil {
		return err
	}

	// A steady leader's renewal: the attempts sent between the send times
	// of consecutive confirmed renewals.
	renewals := leader.sent("renewed")
	la := lctr.attemptLog()
	ren := acc("election: steady leader's renewal", 1, "")
	for i := 0; i+1 < len(renewals); i++ {
		byOp := map[string]int64{}
		var n int64
		for _, a := range la {
			if !a.start.Before(renewals[i]) && a.start.Before(renewals[i+1]) {
				byOp[a.op]++
				n++
			}
		}
		ren.add(n, byOp)
	}

	// A candidate's poll: the candidate's attempts, grouped into polls
	// (rounds) by being sent back to back, within roundGap of the previous
	// answer (a sleep between two polls is longer: its reads come in the
	// leader's rhythm, some only milliseconds apart), leaving out its first
	// round (which tries to create the record before it has seen it).
	poll := acc("election: candidate's poll (leader steady)", 1, "")
	var group []attempt
	flush := func() {
		if len(group) == 0 {
			return
		}
		byOp := map[string]int64{}
		for _, a := range group {
			byOp[a.op]++
		}
		poll.add(int64(len(group)), byOp)
		group = nil
	}
	firstByOp := map[string]int64{}
	var firstN int64
	for _, a := range cctr.attemptLog() {
		if a.start.Before(candStart.Add(electRetry / 2)) {
			firstByOp[a.op]++ // the first round
			firstN++
			continue
		}
		if a.start.After(candStop) {
			break
		}
		if len(group) > 0 && a.start.Sub(group[len(group)-1].start.Add(group[len(group)-1].dur)) > roundGap {
			flush()
		}
		group = append(group, a)
	}
	flush()
	acc("election: candidate's first round, a failed create (leader steady)", 1,
		"the refused create carries the row (ALL_OLD): no read").add(firstN, firstByOp)

	// The release, when the Run is cancelled with ReleaseOnCancel.
	if err := leader.stop(); err != nil {
		return err
	}
	rel := leader.sent("released the lease")
	if len(rel) != 1 {
		return fmt.Errorf("election: %d release log entries, want 1", len(rel))
	}
	byOp := map[string]int64{}
	var n int64
	for _, a := range lctr.attemptLog() {
		if !a.start.Before(rel[0]) {
			byOp[a.op]++
			n++
		}
	}
	acc("election: release (ReleaseOnCancel)", 1, "").add(n, byOp)
	return nil
}

// failedWrites measures a takeover refused because the holder renewed
// first, and a renewal refused because the row was taken: one request
// each, since the refusal carries the row. Each takeover waits out a
// one-second lease, so only a few repetitions run.
func (b *bench) failedWrites(ctx context.Context, table string, acc func(string, float64, string) *opAcc) error {
	// The holder's validity is 90% of its 2 s lease: it renews 1 s after
	// the waiter first saw its RVN, and the waiter tries its takeover once
	// it has watched that RVN for the whole lease.
	const holderLease = 2 * time.Second
	reps := min(b.sc.OpReps, 4)
	b.progress("  failed takeover and renewal, %d repetitions of %v", reps, holderLease)
	ctr := newCounter()
	waiter, err := newLocks(b.clients.client(ctr, nil), table, lock.Config{})
	if err != nil {
		return err
	}
	defer waiter.Close(context.Background())
	holder, err := newLocks(b.clients.client(newCounter(), nil), table, lock.Config{LeaseDuration: holderLease, ManualHeartbeats: true, RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	defer holder.Close(context.Background())
	raw := b.clients.client(newCounter(), nil)
	takeover := acc("lock: failed takeover (the holder renewed just before)", 1, "the refused takeover carries the row (ALL_OLD): no read")
	renewal := acc("lock: failed renewal (Heartbeat of a row taken over)", 1, "the refused renewal carries the row (ALL_OLD): no read")
	for i := 0; i < reps; i++ {
		key := fmt.Sprintf("failed-%s-%d", b.runID, i)
		held, err := holder.Acquire(ctx, key)
		if err != nil {
			return err
		}
		if _, err := waiter.TryAcquire(ctx, key); !errors.Is(err, lock.ErrLocked) {
			return fmt.Errorf("TryAcquire of a held lock: %v", err)
		}
		seen := time.Now()
		time.Sleep(holderLease / 2)
		if err := held.Heartbeat(ctx); err != nil {
			return fmt.Errorf("the holder's heartbeat: %w", err)
		}
		time.Sleep(time.Until(seen.Add(holderLease + 50*time.Millisecond)))
		// The waiter has watched the old RVN for a whole lease: it tries
		// the takeover, conditioned on that RVN, and is refused.
		s := ctr.snapshot()
		if _, err := waiter.TryAcquire(ctx, key); err == nil {
			return fmt.Errorf("a takeover of a renewed lock succeeded")
		}
		takeover.addSnapshot(ctr.since(s))

		mine, err := waiter.Acquire(ctx, key+"-renewal")
		if err != nil {
			return err
		}
		// Another client (a Java host, say) writes over the row.
		if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				dynamodbstore.DefaultPartitionKeyAttribute: &types.AttributeValueMemberS{Value: key + "-renewal"},
				"ownerName":           &types.AttributeValueMemberS{Value: "java-host"},
				"recordVersionNumber": &types.AttributeValueMemberS{Value: fmt.Sprint("stolen-", i)},
				"leaseDuration":       &types.AttributeValueMemberS{Value: "20000"}, // milliseconds, as the Java client writes
			},
		}); err != nil {
			return err
		}
		s = ctr.snapshot()
		if err := mine.Heartbeat(ctx); !errors.Is(err, dynalease.ErrLost) {
			return fmt.Errorf("heartbeat of a stolen lock = %v, want ErrLost", err)
		}
		renewal.addSnapshot(ctr.since(s))
	}
	return nil
}
