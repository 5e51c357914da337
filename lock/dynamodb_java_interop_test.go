package lock_test

// Interoperation with the AWS Java DynamoDB Lock Client 1.1.0, whose rows
// and conditional writes are reproduced here straight through the SDK, in
// the format of the project's golden file (items that client wrote):
// leaseDuration in milliseconds in a string, recordVersionNumber a UUID
// string, data binary, isReleased "1" only once released with the row kept.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
)

// goldenJava are the items of the golden file java-lock-client-items.json,
// in DynamoDB JSON.
const goldenJava = `{
  "held_after_acquire": {"ownerName": {"S": "host-b.example-9d2e"}, "recordVersionNumber": {"S": "eaada884-0b78-4ed5-9fa1-e3d90b113f0f"}, "data": {"B": "amF2YTpob3N0LWIuZXhhbXBsZS05ZDJl"}, "key": {"S": "customer-7"}, "leaseDuration": {"S": "6000"}},
  "held_after_one_heartbeat": {"data": {"B": "amF2YTpob3N0LWIuZXhhbXBsZS05ZDJl"}, "ownerName": {"S": "host-b.example-9d2e"}, "recordVersionNumber": {"S": "ae65fc19-b58d-4380-a45f-7273036e9140"}, "key": {"S": "customer-7"}, "leaseDuration": {"S": "6000"}},
  "released_row_kept": {"data": {"B": "amF2YTpob3N0LWEuZXhhbXBsZS0zZjFj"}, "ownerName": {"S": "host-a.example-3f1c"}, "recordVersionNumber": {"S": "4a359dcd-62df-466e-ab75-0ecd2c158288"}, "isReleased": {"S": "1"}, "key": {"S": "customer-42"}, "leaseDuration": {"S": "20000"}}
}`

// golden returns a fresh copy of the golden item called name.
func golden(t *testing.T, name string) map[string]types.AttributeValue {
	t.Helper()
	var all map[string]map[string]map[string]string
	if err := json.Unmarshal([]byte(goldenJava), &all); err != nil {
		t.Fatal(err)
	}
	raw, ok := all[name]
	if !ok {
		t.Fatalf("no golden item %q", name)
	}
	item := map[string]types.AttributeValue{}
	for attr, typed := range raw {
		for typ, v := range typed {
			switch typ {
			case "S":
				item[attr] = &types.AttributeValueMemberS{Value: v}
			case "B":
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					t.Fatal(err)
				}
				item[attr] = &types.AttributeValueMemberB{Value: b}
			default:
				t.Fatalf("golden %s.%s: type %s", name, attr, typ)
			}
		}
	}
	return item
}

// javaItem builds a row as the Java client writes it.
func javaItem(key, owner, rvn string, lease time.Duration, data []byte, released bool) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		"key":                 &types.AttributeValueMemberS{Value: key},
		"ownerName":           &types.AttributeValueMemberS{Value: owner},
		"leaseDuration":       &types.AttributeValueMemberS{Value: strconv.FormatInt(lease.Milliseconds(), 10)},
		"recordVersionNumber": &types.AttributeValueMemberS{Value: rvn},
	}
	if data != nil {
		item["data"] = &types.AttributeValueMemberB{Value: data}
	}
	if released {
		item["isReleased"] = &types.AttributeValueMemberS{Value: "1"}
	}
	return item
}

// javaHost sends the Java client's conditional writes.
type javaHost struct {
	e     *ddbEnv
	owner string
	lease time.Duration
}

var javaNames = map[string]string{"#k": "key", "#o": "ownerName", "#l": "leaseDuration", "#r": "recordVersionNumber", "#d": "data", "#rel": "isReleased"}

// names returns the placeholders that expr uses.
func names(exprs ...string) map[string]string {
	out := map[string]string{}
	for p, n := range javaNames {
		for _, e := range exprs {
			if containsPlaceholder(e, p) {
				out[p] = n
			}
		}
	}
	return out
}

// containsPlaceholder reports whether expr uses placeholder p as a whole
// token (#r is not part of #rel).
func containsPlaceholder(expr, p string) bool {
	for i := 0; i+len(p) <= len(expr); i++ {
		if expr[i:i+len(p)] != p {
			continue
		}
		end := i + len(p)
		if end == len(expr) || !isIdent(expr[end]) {
			return true
		}
	}
	return false
}

func isIdent(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// put writes the Java lock row for key with a fresh RVN if cond holds.
func (j javaHost) put(ctx context.Context, key, cond string, values map[string]types.AttributeValue) (string, error) {
	rvn := uuid.NewString()
	in := &dynamodb.PutItemInput{
		TableName:                aws.String(j.e.table),
		Item:                     javaItem(key, j.owner, rvn, j.lease, []byte("java:"+j.owner), false),
		ConditionExpression:      aws.String(cond),
		ExpressionAttributeNames: names(cond),
	}
	if len(values) > 0 {
		in.ExpressionAttributeValues = values
	}
	_, err := j.e.raw.PutItem(ctx, in)
	return rvn, err
}

// acquireNew is the Java acquisition of a missing lock.
func (j javaHost) acquireNew(ctx context.Context, key string) (string, error) {
	return j.put(ctx, key, "attribute_not_exists(#k)", nil)
}

// acquireReleased is the Java acquisition of a released lock.
func (j javaHost) acquireReleased(ctx context.Context, key string) (string, error) {
	return j.put(ctx, key, "attribute_exists(#k) AND #rel = :one", map[string]types.AttributeValue{":one": sv("1")})
}

// acquireStale is the Java takeover of a lock whose RVN it saw unchanged
// for a lease (owner deliberately not checked).
func (j javaHost) acquireStale(ctx context.Context, key, seen string) (string, error) {
	return j.put(ctx, key, "attribute_exists(#k) AND #r = :seen", map[string]types.AttributeValue{":seen": sv(seen)})
}

// heartbeat is the Java heartbeat of a lock it holds at RVN cur.
func (j javaHost) heartbeat(ctx context.Context, key, cur string) (string, error) {
	rvn := uuid.NewString()
	update, cond := "SET #l = :ld, #r = :new", "#r = :rvn AND #o = :me"
	_, err := j.e.raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(j.e.table),
		Key:                      j.e.rawKey(key, ""),
		UpdateExpression:         aws.String(update),
		ConditionExpression:      aws.String(cond),
		ExpressionAttributeNames: names(update, cond),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":ld": sv(strconv.FormatInt(j.lease.Milliseconds(), 10)), ":new": sv(rvn), ":rvn": sv(cur), ":me": sv(j.owner),
		},
	})
	return rvn, err
}

// release is the Java release with the row kept (deleteLock=false).
func (j javaHost) release(ctx context.Context, key, cur string) error {
	update, cond := "SET #rel = :one", "#r = :rvn AND #o = :me"
	_, err := j.e.raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(j.e.table),
		Key:                       j.e.rawKey(key, ""),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names(update, cond),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": sv("1"), ":rvn": sv(cur), ":me": sv(j.owner)},
	})
	return err
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// javaBeats heartbeats a Java lock every period until stop closes, then
// reports the last RVN it wrote and when that write was sent.
type javaBeats struct {
	stop chan struct{}
	done chan javaBeatResult
}

type javaBeatResult struct {
	beats    int
	lastRVN  string
	lastSent time.Time
	err      error
}

func (j javaHost) startHeartbeats(key, rvn string, period time.Duration) *javaBeats {
	b := &javaBeats{stop: make(chan struct{}), done: make(chan javaBeatResult, 1)}
	go func() {
		res := javaBeatResult{lastRVN: rvn}
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-b.stop:
				b.done <- res
				return
			case <-tick.C:
			}
			sent := time.Now()
			next, err := j.heartbeat(context.Background(), key, res.lastRVN)
			if err != nil {
				res.err = err
				b.done <- res
				return
			}
			res.beats++
			res.lastRVN, res.lastSent = next, sent
		}
	}()
	return b
}

func (b *javaBeats) halt(t *testing.T) javaBeatResult {
	t.Helper()
	close(b.stop)
	res := <-b.done
	if res.err != nil {
		t.Fatalf("Java heartbeat %d failed, so the Java host lost its lock: %v", res.beats+1, res.err)
	}
	return res
}

func TestDynamoDBJavaHeldLockBlocksUntilSilentForItsLease(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	// Our own lease is shorter than the Java holder's: a waiter must use
	// the holder's lease from the row.
	const ourLease, javaLease = time.Second, 1500 * time.Millisecond
	opts := []lock.Option{lock.WithLeaseDuration(ourLease), lock.WithHeartbeatPeriod(200 * time.Millisecond), lock.WithRequestTimeout(200 * time.Millisecond)}
	budget, patient, tryer := e.newTimedClient(opts...), e.newTimedClient(opts...), e.newTimedClient(opts...)
	ctx := t.Context()

	java := javaHost{e: e, owner: "host-b.example-9d2e", lease: javaLease}
	held := golden(t, "held_after_acquire")
	held["key"] = sv("customer-7")
	held["leaseDuration"] = sv(strconv.FormatInt(javaLease.Milliseconds(), 10))
	e.put(held)
	beats := java.startHeartbeats("customer-7", str(held, "recordVersionNumber"), 400*time.Millisecond)
	defer func() {
		select {
		case <-beats.stop:
		default:
			close(beats.stop)
		}
	}()

	start := time.Now()
	if _, err := tryer.TryAcquire(ctx, "customer-7"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("TryAcquire of a held Java lock = %v, want ErrLocked", err)
	}
	if _, err := tryer.TryAcquire(ctx, "customer-7"); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("TryAcquire of a held Java lock = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > slack {
		t.Errorf("TryAcquire and FailIfLocked took %v", d)
	}

	type outcome struct {
		l   *lock.Lock
		err error
		at  time.Time
	}
	budgetDone, patientDone := make(chan outcome, 1), make(chan outcome, 1)
	start = time.Now()
	go func() {
		l, err := budget.Acquire(ctx, "customer-7")
		budgetDone <- outcome{l, err, time.Now()}
	}()
	go func() {
		l, err := patient.Acquire(ctx, "customer-7", lock.WithAdditionalWait(time.Minute))
		patientDone <- outcome{l, err, time.Now()}
	}()

	// Without extra wait, Acquire gives up after the Java holder's lease.
	select {
	case o := <-budgetDone:
		if !errors.Is(o.err, lock.ErrLocked) {
			t.Fatalf("Acquire of a renewed Java lock = (lock %t, error %v), want ErrLocked", o.l != nil, o.err)
		}
		if waited := o.at.Sub(start); waited < javaLease || waited > javaLease+slack {
			t.Errorf("Acquire gave up after %v, want the Java holder's lease %v (not ours, %v)", waited, javaLease, ourLease)
		}
	case <-time.After(patience):
		t.Fatal("Acquire never gave up on a renewed Java lock")
	}

	// While the Java host heartbeats, nobody gets its lock.
	select {
	case o := <-patientDone:
		t.Fatalf("Acquire returned (lock %t, error %v) while the Java host heartbeats", o.l != nil, o.err)
	case <-time.After(2*javaLease - time.Since(start)):
	}
	last := beats.halt(t)
	stopped := time.Now()
	if last.beats < 5 {
		t.Fatalf("only %d Java heartbeats", last.beats)
	}

	select {
	case o := <-patientDone:
		if o.err != nil {
			t.Fatalf("Acquire after the Java host went silent: %v", o.err)
		}
		if quiet := o.at.Sub(last.lastSent); quiet < javaLease {
			t.Errorf("took the Java lock %v after its last heartbeat, before its lease %v", quiet, javaLease)
		}
		if late := o.at.Sub(stopped); late > javaLease+slack {
			t.Errorf("took the Java lock %v after its heartbeats stopped, want about its lease %v", late, javaLease)
		}
		checkJavaReadable(t, "taken over from Java", e.item("customer-7"), patient.Identity(), ourLease, false)
		if d := e.item("customer-7")["data"]; d != nil {
			t.Errorf("the Java holder's data %#v survived a takeover without WithReplaceData(false)", d)
		}
	case <-time.After(patience):
		t.Fatal("Acquire never took over the silent Java lock")
	}
	// The Java host, back, finds out at its next heartbeat.
	if _, err := java.heartbeat(ctx, "customer-7", last.lastRVN); !conditionFailed(err) {
		t.Errorf("a Java heartbeat after our takeover = %v, want a conditional-check failure", err)
	}
}

func TestDynamoDBJavaReleasedRowIsTakenAtOnce(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient()
	e.put(golden(t, "released_row_kept")) // lease 20 s: waiting would show
	c.ft.Reset()
	start := time.Now()
	l := mustAcquire(t, c, "customer-42")
	if d := time.Since(start); d > slack {
		t.Errorf("Acquire of a released Java row took %v", d)
	}
	c.wantCounts(t, "Acquire of a released Java row", map[string]int{"UpdateItem": 1})
	it := e.item("customer-42")
	checkJavaReadable(t, "released Java row taken", it, c.Identity(), testLease, false)
	if str(it, "recordVersionNumber") != l.RVN() {
		t.Errorf("row RVN %q, lock RVN %q", str(it, "recordVersionNumber"), l.RVN())
	}
}

func TestDynamoDBJavaHolderReleasingWakesAWaiter(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient()
	java := javaHost{e: e, owner: "host-j", lease: 20 * time.Second}
	rvn, err := java.acquireNew(t.Context(), "j")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var at time.Time
	go func() {
		_, err := c.Acquire(t.Context(), "j", lock.WithAdditionalWait(time.Minute))
		at = time.Now()
		got <- err
	}()
	time.Sleep(3 * testRefresh)
	released := time.Now()
	if err := java.release(t.Context(), "j", rvn); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		// The subject: a Java release keeps the row's RVN, and a waiter
		// takes the released row at a poll rather than waiting out the
		// Java lease (20 s) for the RVN to change. How soon after the
		// release (about one refresh period on an idle machine) is a
		// figure, not asserted: a busy machine took 0.9 s once.
		d := at.Sub(released)
		t.Logf("took %v after the Java release (refresh period %v)", d, testRefresh)
		if d >= java.lease/4 {
			t.Errorf("took %v after the Java release: the row was waited out, not taken at a poll", d)
		}
	case <-time.After(patience):
		t.Fatal("Acquire did not take the lock the Java host released")
	}
}

func TestDynamoDBJavaGoldenRowsAreListed(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient()
	e.put(golden(t, "held_after_one_heartbeat"))
	e.put(golden(t, "released_row_kept"))
	infos, err := c.List(t.Context(), "")
	if err != nil || len(infos) != 2 {
		t.Fatalf("List = %+v, %v", infos, err)
	}
	for _, in := range infos {
		var owner, data string
		var l time.Duration
		var released bool
		switch in.Key {
		case "customer-7":
			owner, data, l = "host-b.example-9d2e", "java:host-b.example-9d2e", 6*time.Second
		case "customer-42":
			owner, data, l, released = "host-a.example-3f1c", "java:host-a.example-3f1c", 20*time.Second, true
		}
		if in.Err != nil || in.HolderIdentity != owner || string(in.Data) != data || in.LeaseDuration != l || in.Released != released {
			t.Errorf("golden row listed as %+v", in)
		}
	}
	if _, err := c.TryAcquire(t.Context(), "customer-7"); !errors.Is(err, lock.ErrLocked) {
		t.Errorf("TryAcquire of the held golden row = %v, want ErrLocked", err)
	}
}

func TestDynamoDBJavaCannotAcquireOurHeldLocks(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient()
	ctx := t.Context()
	java := javaHost{e: e, owner: "java-host", lease: 1500 * time.Millisecond}

	l := mustAcquire(t, c, "ours", lock.WithData([]byte("go")))
	checkJavaReadable(t, "held", e.item("ours"), c.Identity(), testLease, false)
	if _, err := java.acquireNew(ctx, "ours"); !conditionFailed(err) {
		t.Errorf("Java acquire (new) of our held lock = %v, want a conditional-check failure", err)
	}
	if _, err := java.acquireReleased(ctx, "ours"); !conditionFailed(err) {
		t.Errorf("Java acquire (released) of our held lock = %v, want a conditional-check failure", err)
	}
	// A Java waiter that saw our RVN finds it changed by our heartbeats.
	seen := str(e.item("ours"), "recordVersionNumber")
	time.Sleep(2*testHeartbeat + testHeartbeat/2)
	checkJavaReadable(t, "after heartbeats", e.item("ours"), c.Identity(), testLease, false)
	if _, err := java.acquireStale(ctx, "ours", seen); !conditionFailed(err) {
		t.Errorf("Java acquire (stale, RVN seen %v ago) of our heartbeating lock = %v, want a conditional-check failure", 2*testHeartbeat, err)
	}
	if str(e.item("ours"), "ownerName") != c.Identity() || !l.IsHeld() {
		t.Fatal("our lock changed hands")
	}

	mustRelease(t, l)
	checkJavaReadable(t, "released", e.item("ours"), c.Identity(), testLease, true)
	if _, err := java.acquireNew(ctx, "ours"); !conditionFailed(err) {
		t.Errorf("Java acquire (new) of our released, kept row = %v, want a conditional-check failure", err)
	}
	if _, err := java.acquireReleased(ctx, "ours"); err != nil {
		t.Errorf("Java acquire (released) of our released row: %v", err)
	}
	if info, err := c.Get(ctx, "ours"); err != nil || info.HolderIdentity != "java-host" || info.Released {
		t.Errorf("after the Java acquisition Get = %+v, %v", info, err)
	}
	if _, err := c.TryAcquire(ctx, "ours"); !errors.Is(err, lock.ErrLocked) {
		t.Errorf("TryAcquire of the Java-held lock = %v, want ErrLocked", err)
	}

	l = mustAcquire(t, c, "deleted", lock.WithDeleteOnRelease())
	if _, err := java.acquireNew(ctx, "deleted"); !conditionFailed(err) {
		t.Errorf("Java acquire (new) of our held lock = %v, want a conditional-check failure", err)
	}
	mustRelease(t, l)
	if _, err := java.acquireNew(ctx, "deleted"); err != nil {
		t.Errorf("Java acquire (new) after our deleting release: %v", err)
	}
}

func TestDynamoDBJavaReadsEveryRowWeWrite(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient(lock.WithHeartbeatPeriod(0))
	check := func(what string, released bool) {
		t.Helper()
		checkJavaReadable(t, what, e.item("w"), c.Identity(), testLease, released)
	}
	l := mustAcquire(t, c, "w", lock.WithData([]byte("d")), lock.WithAttributes(map[string]any{"app": sv("x")}))
	check("Acquire with data and attributes", false)
	mustHeartbeat(t, l)
	check("Heartbeat", false)
	mustSetData(t, l, []byte("e"))
	check("SetData", false)
	mustSetData(t, l, nil)
	check("SetData(nil)", false)
	mustRelease(t, l, lock.ReleaseWithData([]byte("f")))
	check("ReleaseWithData", true)
	l = mustAcquire(t, c, "w", lock.WithReplaceData(false))
	check("re-Acquire keeping data", false)
	mustRelease(t, l)
	check("Release", true)
}

func TestDynamoDBJavaStaleTakeoverOfOurLockIsReportedStolen(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newTimedClient()
	l := mustAcquire(t, c, "k")
	// A Java host whose stale-lock condition holds (it read our RVN and,
	// wrongly, thinks a lease has passed) overwrites the row; the Java
	// condition does not check the owner.
	java := javaHost{e: e, owner: "java-thief", lease: 1500 * time.Millisecond}
	if _, err := java.acquireStale(t.Context(), "k", l.RVN()); err != nil {
		t.Fatalf("Java stale acquire: %v", err)
	}
	select {
	case <-l.Done():
	case <-time.After(testHeartbeat + slack):
		t.Fatal("the theft was not found by the next heartbeat")
	}
	if lost := lostError(t, l.Err()); lost.Reason != dynalease.Stolen || lost.HolderIdentity != "java-thief" {
		t.Errorf("Err = %v, want dynalease.Stolen by java-thief", lost)
	}
	if got := str(e.item("k"), "ownerName"); got != "java-thief" {
		t.Errorf("row owner %q after our loss; our heartbeat or release overwrote the Java holder", got)
	}
}

// A key held by readers is, to the AWS Java lock client, held by the owner
// "dynalease:readers" with the readers' lease, and renewed by every
// reader's heartbeat: Java never takes it from a live reader, takes it once
// the readers released it, and takes it over once every reader went
// silent for the lease, which our readers then find lost.
func TestDynamoDBJavaSeesReadersAsOneLiveHolder(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	ctx := t.Context()
	java := javaHost{e: e, owner: "java-host", lease: 1500 * time.Millisecond}
	a, b := e.newTimedClient(), e.newTimedClient()
	ra, err := a.AcquireShared(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.AcquireShared(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	checkJavaReadable(t, "held by two readers", e.item("cfg"), "dynalease:readers", testLease, false)
	if _, err := java.acquireNew(ctx, "cfg"); !conditionFailed(err) {
		t.Errorf("Java acquire (new) of a key two read = %v, want a conditional-check failure", err)
	}
	if _, err := java.acquireReleased(ctx, "cfg"); !conditionFailed(err) {
		t.Errorf("Java acquire (released) of a key two read = %v, want a conditional-check failure", err)
	}
	seen := str(e.item("cfg"), "recordVersionNumber")
	time.Sleep(2*testHeartbeat + testHeartbeat/2)
	if _, err := java.acquireStale(ctx, "cfg", seen); !conditionFailed(err) {
		t.Errorf("Java acquire (stale) of a key whose readers heartbeat = %v, want a conditional-check failure", err)
	}
	mustRelease(t, ra)
	checkJavaReadable(t, "held by one reader", e.item("cfg"), "dynalease:readers", testLease, false)
	mustRelease(t, rb)
	checkJavaReadable(t, "released by the last reader", e.item("cfg"), "dynalease:readers", testLease, true)
	if _, err := java.acquireReleased(ctx, "cfg"); err != nil {
		t.Fatalf("Java acquire (released) after the readers: %v", err)
	}
	if _, err := a.TryAcquireShared(ctx, "cfg"); !errors.Is(err, lock.ErrLocked) {
		t.Errorf("TryAcquireShared of the Java-held key = %v, want ErrLocked", err)
	}

	// A silent reader is taken over by Java once its RVN stood for the
	// lease, by when the reader counted itself no longer a holder.
	silent := e.newTimedClient(lock.WithHeartbeatPeriod(0))
	r, err := silent.AcquireShared(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	seen = str(e.item("other"), "recordVersionNumber")
	time.Sleep(testLease)
	if r.IsHeld() {
		t.Fatal("a reader silent for its lease still counts itself a holder")
	}
	if _, err := java.acquireStale(ctx, "other", seen); err != nil {
		t.Fatalf("Java takeover of a silent reader after its lease: %v", err)
	}
	if str(e.item("other"), "ownerName") != "java-host" {
		t.Fatal("the Java takeover did not land")
	}
	if err := r.Heartbeat(ctx); !errors.Is(err, dynalease.ErrLost) {
		t.Errorf("the silent reader's heartbeat after the Java takeover: %v, want a loss", err)
	}
}
