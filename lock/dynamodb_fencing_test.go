package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/lock"
)

// fgRowState is what the test did to the lock row since the last
// acquisition: it decides what the next acquisition must cost and what its
// token must look like.
type fgRowState int

const (
	fgNoRow          fgRowState = iota // the first acquisition: no row yet
	fgKept                             // released by its holder, row kept
	fgDeletedRelease                   // released by its holder, row deleted
	fgTTLDeleted                       // released and kept, then deleted as TTL would
	fgJavaReleased                     // rewritten whole in the Java client's format, released
	fgJavaHeld                         // rewritten whole in the Java format, held with a 1 ms lease
	fgJavaInPlace                      // taken in place by a Java client (our attributes stay), 1 ms lease
	fgHeldDeleted                      // deleted while held
	fgSilent                           // held by a holder without heartbeats, taken over after its lease
	fgCounterAtMax                     // released, its counter one short of the largest
	fgCounterFull                      // released, its counter at the largest
	fgRowStates
)

var fgRowStateNames = [fgRowStates]string{
	fgNoRow:          "no row yet",
	fgKept:           "released row kept",
	fgDeletedRelease: "row deleted on release",
	fgTTLDeleted:     "released row deleted (TTL)",
	fgJavaReleased:   "Java-format released row",
	fgJavaHeld:       "Java-format held row, takeover",
	fgJavaInPlace:    "Java in-place takeover, then ours",
	fgHeldDeleted:    "held row deleted",
	fgSilent:         "silent holder, takeover",
	fgCounterAtMax:   "kept, counter reaches max",
	fgCounterFull:    "kept, counter full",
}

// newToFencing reports whether an acquisition over a row in state s finds
// no usable fencing attributes there and so must fetch a new generation.
func (s fgRowState) newToFencing() bool {
	switch s {
	case fgNoRow, fgDeletedRelease, fgTTLDeleted, fgJavaReleased, fgJavaHeld, fgHeldDeleted, fgCounterFull:
		return true
	}
	return false
}

// wantRequests is the exact number of requests, per operation, of an
// acquisition over a row in state s (fence table included), and how many of
// them go to the fence table.
func (s fgRowState) wantRequests() (map[string]int, int) {
	var ops map[string]int
	switch s {
	case fgJavaHeld, fgJavaInPlace, fgSilent:
		// A Create that fails (its answer carries the row: no read), a
		// join of the row's queue, the takeover once the holder's lease
		// has passed since that answer (which takes the waiter, at the
		// queue's head, out of it).
		ops = map[string]int{"UpdateItem": 3}
	default:
		ops = map[string]int{"UpdateItem": 1} // one Create
	}
	if s.newToFencing() {
		ops["UpdateItem"] += 2 // bump the generation, write it into the row
		return ops, 1
	}
	return ops, 0
}

// fgCost accumulates the requests of the acquisitions over one row state.
type fgCost struct {
	n      int
	ops    map[string]int
	fences int
}

// TestDynamoDBFencingTokensGrowAcrossAThousandAcquisitions takes one key
// more than a thousand times, by several clients, through every way a row
// can change hands: kept and deleted releases, re-acquisition by the same
// owner, takeover of a silent holder, TTL-style deletion, deletion while
// held, and rewrites in the AWS Java lock client's format (whole-item
// released or held with a 1 ms lease, and in place). Every token must be
// above every earlier one, heartbeats must never change a token, and only
// acquisitions of a row new to fencing may cost the two extra requests of
// a new generation.
func TestDynamoDBFencingTokensGrowAcrossAThousandAcquisitions(t *testing.T) {
	e := newFGEnv(t)
	const (
		key          = "fenced"
		acquisitions = 1000
		silentLease  = 500 * time.Millisecond
		beatPeriod   = 50 * time.Millisecond
	)
	rng := rand.New(rand.NewPCG(0x5eed, 2026))
	pool := []*fgClient{e.newClient("a"), e.newClient("b"), e.newClient("c")}
	// The request counts of an acquisition are exact only when nothing
	// beyond the test's control added a request: a request timeout (the
	// resolving read), a confirmation that came after the validity (the
	// renewal before handing out), a background heartbeat. An acquisition
	// that took less than its client's request timeout saw none of the
	// first two, and one counted before 80% of a heartbeat period (the
	// earliest first heartbeat) none of the last: those are checked
	// exactly, the others only for not asking less. Pool clients have the
	// environment's generous timeout, so on a busy machine nearly all
	// rounds still count.
	timeout := map[*fgClient]time.Duration{}
	for _, c := range pool {
		timeout[c] = fgTimeout
	}
	silent := e.newClient("silent", lock.WithLeaseDuration(silentLease), lock.WithRequestTimeout(200*time.Millisecond))
	timeout[silent] = 200 * time.Millisecond
	beating := e.newClient("beating", lock.WithHeartbeatPeriod(beatPeriod), lock.WithRequestTimeout(300*time.Millisecond))
	timeout[beating] = 300 * time.Millisecond
	silentAt := map[int]bool{97: true, 291: true, 488: true, 683: true, 877: true}
	beatingAt := map[int]bool{150: true, 450: true, 750: true}
	const counterAt = 600 // after this acquisition the row's counter is set one short of its maximum

	ctx := t.Context()
	state := fgNoRow
	var (
		last        int64      // the largest token so far
		prev        *lock.Lock // the previous acquisition's lock
		prevOwner   string
		sameOwner   int
		heartbeats  int
		unchecked   int // acquisitions whose counts were not checked exactly
		costs       [fgRowStates]fgCost
		javaRVN     string
		silentLocks []*lock.Lock
	)
	start := time.Now()
	for i := 0; i < acquisitions; i++ {
		c := pool[rng.IntN(len(pool))]
		switch {
		case silentAt[i]:
			c = silent
		case beatingAt[i]:
			c = beating
		}
		var opts []lock.AcquireOption
		deleteOnRelease := rng.IntN(10) == 0 && c != silent && i != counterAt && i != counterAt+1
		if deleteOnRelease {
			opts = append(opts, lock.WithDeleteOnRelease())
		}

		// The acquisition, with its requests counted.
		c.ft.Reset()
		fences0 := c.fenceCount()
		began := time.Now()
		l := c.mustAcquire(t, key, opts...)
		took := time.Since(began)
		ops, fences := c.ft.Counts(), c.fenceCount()-fences0
		counted := time.Since(began)
		controlled := took < timeout[c] && (c != beating || counted < beatPeriod*8/10)
		for op, n := range ops {
			if n == 0 {
				delete(ops, op)
			}
		}

		tok := l.Token()
		what := fmt.Sprintf("acquisition %d by %s over %q", i, c.Identity(), fgRowStateNames[state])
		if tok <= last {
			t.Fatalf("%s: token %#x is not above the previous largest %#x", what, tok, last)
		}
		gen, ctr := tok>>32, tok&maxFenceCounter
		lastGen, lastCtr := last>>32, last&maxFenceCounter
		switch {
		case state.newToFencing():
			if gen <= lastGen || ctr != 2 {
				t.Errorf("%s: token %#x, want a new generation above %d with counter 2", what, tok, lastGen)
			}
		case state == fgCounterAtMax:
			if gen != lastGen || ctr != maxFenceCounter {
				t.Errorf("%s: token %#x, want generation %d with the counter at its maximum", what, tok, lastGen)
			}
		default:
			if gen != lastGen || ctr != lastCtr+1 {
				t.Errorf("%s: token %#x, want the same generation %d and counter %d", what, tok, lastGen, lastCtr+1)
			}
		}
		wantOps, wantFences := state.wantRequests()
		switch {
		case controlled:
			if !fgSameCounts(ops, wantOps) || fences != wantFences {
				t.Errorf("%s: requests %v (%d to the fence table), want %v (%d)", what, ops, fences, wantOps, wantFences)
			}
		case !fgAtLeastCounts(ops, wantOps) || fences < wantFences:
			t.Errorf("%s (took %v): requests %v (%d to the fence table), want at least %v (%d)", what, took, ops, fences, wantOps, wantFences)
		default:
			unchecked++
		}
		cost := &costs[state]
		if cost.ops == nil {
			cost.ops = map[string]int{}
		}
		cost.n++
		cost.fences += fences
		for op, n := range ops {
			cost.ops[op] += n
		}
		if c.Identity() == prevOwner {
			sameOwner++
		}

		// What the taken-over holder must see.
		switch state {
		case fgSilent:
			if took < silentLease {
				t.Errorf("%s: took the silent holder's lock after %v, before its lease %v", what, took, silentLease)
			}
			if err := prev.Release(ctx); !errors.Is(err, dynalease.ErrLost) {
				t.Errorf("%s: the silent holder's Release = %v, want ErrLost", what, err)
			}
			if got := fgStr(e.lockRow(key), "ownerName"); got != c.Identity() {
				t.Errorf("%s: the silent holder's Release left the row to %q", what, got)
			}
		case fgJavaHeld, fgJavaInPlace:
			// The beating client's heartbeats (every 50 ms) move the RVN
			// on while the row is read: the row is then the taker's
			// if it names it and no longer carries Java's RVN.
			row := e.lockRow(key)
			got, owner := fgStr(row, "recordVersionNumber"), fgStr(row, "ownerName")
			if owner != c.Identity() || got == javaRVN || (c != beating && got != l.RVN()) {
				t.Errorf("%s: row owner %q, RVN %q; want the taker %q with its RVN %q (Java's was %q)", what, owner, got, c.Identity(), l.RVN(), javaRVN)
			}
		}
		last = tok
		prev, prevOwner = l, c.Identity()

		// Heartbeats never change the token, neither the lock's nor the
		// row's.
		switch {
		case c == beating:
			rvn := l.RVN()
			deadline := time.Now().Add(fgPatient)
			for l.RVN() == rvn || time.Now().Before(began.Add(6*beatPeriod)) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: no background heartbeat within %v", what, fgPatient)
				}
				time.Sleep(10 * time.Millisecond)
			}
			heartbeats++
			// The RVN moves on in the background: compare tokens only.
			fgCheckToken(t, e, key, l, tok, false, what+", after background heartbeats")
		case rng.IntN(12) == 0:
			for n := 1 + rng.IntN(2); n > 0; n-- {
				rvn := l.RVN()
				if err := l.Heartbeat(ctx); err != nil {
					t.Fatalf("%s: Heartbeat: %v", what, err)
				}
				if l.RVN() == rvn {
					t.Fatalf("%s: Heartbeat kept the RVN", what)
				}
				heartbeats++
			}
			fgCheckToken(t, e, key, l, tok, true, what+", after heartbeats")
		}

		// What happens to the row before the next acquisition.
		released := func(opts ...lock.ReleaseOption) {
			t.Helper()
			if err := l.Release(ctx, opts...); err != nil {
				t.Fatalf("%s: Release: %v", what, err)
			}
			state = fgKept
			if deleteOnRelease {
				state = fgDeletedRelease
			}
		}
		// lostTo overwrites the held row and checks that the holder finds
		// out at its next heartbeat.
		lostTo := func(next fgRowState, reason dynalease.LostReason, overwrite func()) {
			t.Helper()
			overwrite()
			err := l.Heartbeat(ctx)
			var lost *dynalease.LostError
			if !errors.As(err, &lost) || lost.Reason != reason {
				t.Fatalf("%s: heartbeat after the row was overwritten = %v, want a loss (%v)", what, err, reason)
			}
			state = next
		}
		switch r := rng.IntN(100); {
		case c == silent:
			silentLocks = append(silentLocks, l)
			state = fgSilent // silent from now on: no heartbeats, no release
		case i == counterAt:
			released()
			fgSetCounter(t, e, key, maxFenceCounter-1)
			state = fgCounterAtMax
		case state == fgCounterAtMax: // the state this acquisition found
			released()
			state = fgCounterFull
		case r < 6:
			released(lock.ReleaseDelete(true))
			state = fgDeletedRelease
		case r < 12:
			released()
			e.deleteLockRow(key)
			state = fgTTLDeleted
		case r < 18:
			released()
			e.putRaw(e.locks, fgJavaRow(key, "java-host-r", uuid.NewString(), time.Minute, true))
			state = fgJavaReleased
		case r < 23:
			javaRVN = uuid.NewString()
			lostTo(fgJavaHeld, dynalease.Stolen, func() {
				e.putRaw(e.locks, fgJavaRow(key, "java-host-h", javaRVN, time.Millisecond, false))
			})
		case r < 28:
			javaRVN = uuid.NewString()
			lostTo(fgJavaInPlace, dynalease.Stolen, func() { fgJavaTakeInPlace(t, e, key, "java-host-p", javaRVN) })
		case r < 32:
			lostTo(fgHeldDeleted, dynalease.Deleted, func() { e.deleteLockRow(key) })
		default:
			released()
		}
	}
	elapsed := time.Since(start)
	if prev != nil && !fgEnded(prev) {
		_ = prev.Release(ctx)
	}
	for _, l := range silentLocks {
		if l.IsHeld() {
			t.Errorf("a silent holder's lock still counts as held")
		}
	}

	// The report: what the acquisitions cost, by the state of the row.
	var b strings.Builder
	total := fgCost{ops: map[string]int{}}
	fmt.Fprintf(&b, "%d acquisitions in %v (%d by the previous owner again, %d heartbeats checked, %d with timing beyond the test's control counted only as a lower bound); requests per acquisition by row state:\n",
		acquisitions, elapsed.Round(time.Millisecond), sameOwner, heartbeats, unchecked)
	for s, cost := range costs {
		if cost.n == 0 {
			continue
		}
		sum := 0
		for op, n := range cost.ops {
			sum += n
			total.ops[op] += n
		}
		total.n += cost.n
		total.fences += cost.fences
		fmt.Fprintf(&b, "  %-34s %4d acquisitions, %5d requests (%.2f each: %s), %d to the fence table\n",
			fgRowStateNames[s], cost.n, sum, float64(sum)/float64(cost.n), fgFormatCounts(cost.ops), cost.fences)
	}
	fmt.Fprintf(&b, "  %-34s %4d acquisitions: %s, %d to the fence table", "all", total.n, fgFormatCounts(total.ops), total.fences)
	t.Log(b.String())
	for s := range fgRowStates {
		if costs[s].n == 0 {
			t.Errorf("no acquisition over a row in state %q: the mix lost a case", fgRowStateNames[s])
		}
	}
	if sameOwner == 0 {
		t.Error("no re-acquisition by the same owner")
	}
	if unchecked > acquisitions/10 {
		t.Errorf("%d of %d acquisitions had their request counts checked only as a lower bound, want at most a tenth", unchecked, acquisitions)
	}
}

// fgCheckToken checks that l still has token tok and that its row carries
// it (and l's RVN, when rvn).
func fgCheckToken(t *testing.T, e *fgEnv, key string, l *lock.Lock, tok int64, rvn bool, what string) {
	t.Helper()
	if got := l.Token(); got != tok {
		t.Fatalf("%s: the lock's token changed from %#x to %#x", what, tok, got)
	}
	row := e.lockRow(key)
	if got := fgRowToken(t, row); got != tok {
		t.Fatalf("%s: the row's token is %#x, want %#x", what, got, tok)
	}
	if got := fgStr(row, "recordVersionNumber"); rvn && got != l.RVN() {
		t.Fatalf("%s: the row's RVN is %q, want the lock's %q", what, got, l.RVN())
	}
}

// fgJavaRow is a whole lock row as the AWS Java lock client writes it:
// key, ownerName, leaseDuration in milliseconds, recordVersionNumber, and
// isReleased "1" once released. Nothing of dynalease's.
func fgJavaRow(key, owner, rvn string, lease time.Duration, released bool) map[string]types.AttributeValue {
	row := map[string]types.AttributeValue{
		"key":                 fgS(key),
		"ownerName":           fgS(owner),
		"leaseDuration":       fgS(fmt.Sprint(lease.Milliseconds())),
		"recordVersionNumber": fgS(rvn),
		"data":                &types.AttributeValueMemberB{Value: []byte("java:" + owner)},
	}
	if released {
		row["isReleased"] = fgS("1")
	}
	return row
}

// fgJavaTakeInPlace rewrites the held row the way the Java client takes a
// lock over with updateExistingLockRecord: an UpdateItem of its own
// attributes only (here with a 1 ms lease), which leaves dynalease's
// attributes as they were.
func fgJavaTakeInPlace(t *testing.T, e *fgEnv, key, owner, rvn string) {
	t.Helper()
	_, err := e.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:        aws.String(e.locks),
		Key:              map[string]types.AttributeValue{"key": fgS(key)},
		UpdateExpression: aws.String("SET #o = :o, #l = :l, #r = :r REMOVE #rel"),
		ExpressionAttributeNames: map[string]string{
			"#o": "ownerName", "#l": "leaseDuration", "#r": "recordVersionNumber", "#rel": "isReleased",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": fgS(owner), ":l": fgS("1"), ":r": fgS(rvn)},
	})
	if err != nil {
		t.Fatalf("Java in-place takeover: %v", err)
	}
}

// fgSetCounter sets the row's acquisition counter, as if that many
// acquisitions had been recorded in it.
func fgSetCounter(t *testing.T, e *fgEnv, key string, n int64) {
	t.Helper()
	_, err := e.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.locks),
		Key:                       map[string]types.AttributeValue{"key": fgS(key)},
		UpdateExpression:          aws.String("SET leaderTransitions = :n"),
		ConditionExpression:       aws.String("attribute_exists(#k)"),
		ExpressionAttributeNames:  map[string]string{"#k": "key"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": fgN(n)},
	})
	if err != nil {
		t.Fatalf("setting the counter: %v", err)
	}
}

func fgSameCounts(got, want map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	for op, n := range want {
		if got[op] != n {
			return false
		}
	}
	return true
}

// fgAtLeastCounts reports whether got has at least the requests of want
// (a timeout adds a read, a late confirmation a write, a heartbeat a write).
func fgAtLeastCounts(got, want map[string]int) bool {
	for op, n := range want {
		if got[op] < n {
			return false
		}
	}
	return true
}

func fgFormatCounts(m map[string]int) string {
	ops := make([]string, 0, len(m))
	for op := range m {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %d", op, m[op])
	}
	return strings.Join(parts, ", ")
}

// maxFenceCounter is the largest counter a token carries in its low 32
// bits, as the tokens' documented packing says.
const maxFenceCounter = 1<<32 - 1
