package lock_test

// Tests of the lock client against a real DynamoDB server (DynamoDB Local
// in `make test`), on the real clock, through the public API only. Requests
// go through a faulthttp.Transport per client, which counts them and injects
// faults. Leases are short (1.5 s) so that whole timelines fit in seconds.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// Timing of the clients these tests build, unless a test overrides it. Both
// sets satisfy heartbeat + request timeout ≤ (lease − margin) / 2.
//
// newClient is for tests whose subject is not timing: its lease outlasts
// any stall of a loaded machine (a lock must not run out because the test
// was descheduled) and its requests have a generous timeout (a timeout
// would add a resolving read to a request count). Heartbeats stay short so
// that tests which need some see them soon.
//
// newTimedClient is for timelines (waiting, handover, takeover, faults):
// a short lease keeps them quick, and what they assert of "how soon" has
// slack for a loaded machine.
const (
	untimedLease    = time.Minute
	untimedValidity = untimedLease - untimedLease/10
	untimedTimeout  = 5 * time.Second

	testLease     = 1500 * time.Millisecond
	testMargin    = testLease / 10 // the default safety margin
	testValidity  = testLease - testMargin
	testHeartbeat = 250 * time.Millisecond
	testRefresh   = 100 * time.Millisecond
	testTimeout   = 300 * time.Millisecond

	// slack absorbs scheduling delays of a loaded two-core machine running
	// the race detector. It only ever loosens upper bounds of "how soon";
	// lower bounds, which are what safety is about, are checked exactly.
	slack = 700 * time.Millisecond
	// patience bounds waits for things that must happen.
	patience = 10 * time.Second
)

// ddbEnv is one test's lock table with a plain SDK client for raw reads and
// writes, the way another program (or a Java lock client) would see it.
type ddbEnv struct {
	t     *testing.T
	raw   *dynamodb.Client
	table string
	pk    string
	sk    string
	seq   atomic.Int32
}

func newDDBEnv(t *testing.T, spec ddbtest.TableSpec) *ddbEnv {
	t.Helper()
	raw := ddbtest.Client(t)
	if spec.PartitionKey == "" {
		spec.PartitionKey = ddbtest.DefaultPartitionKey
	}
	return &ddbEnv{t: t, raw: raw, table: ddbtest.NewTable(t, raw, spec), pk: spec.PartitionKey, sk: spec.SortKey}
}

// ddbClient is a lock client whose requests go through ft, which also logs
// when each request left.
type ddbClient struct {
	*lock.Client
	ft *faulthttp.Transport

	mu   sync.Mutex
	sent []sentRequest
}

type sentRequest struct {
	op string
	at time.Time
}

// quickRetries keeps the SDK's retry decisions (three attempts) but with a
// short fixed backoff and no retry quota, so that a retry fits in a request
// timeout of a short lease.
func quickRetries(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 3
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 10 * time.Millisecond, nil })
		so.RateLimiter = ratelimit.None
	})
}

// newClient returns a lock client on the env's table with the untimed
// lease and request timeout (see above), the test heartbeat and refresh,
// and a unique owner name; opts are applied after those. It is closed when
// the test ends (after every fault rule has been removed), and Close must
// succeed.
func (e *ddbEnv) newClient(opts ...lock.Option) *ddbClient {
	e.t.Helper()
	return e.client(append([]lock.Option{lock.WithLeaseDuration(untimedLease), lock.WithRequestTimeout(untimedTimeout)}, opts...))
}

// newTimedClient is newClient with the short test lease and request
// timeout, for timelines.
func (e *ddbEnv) newTimedClient(opts ...lock.Option) *ddbClient {
	e.t.Helper()
	return e.client(opts)
}

func (e *ddbEnv) client(opts []lock.Option) *ddbClient {
	t := e.t
	t.Helper()
	c := &ddbClient{ft: faulthttp.New(nil)}
	c.ft.OnRequest = func(op string) {
		c.mu.Lock()
		c.sent = append(c.sent, sentRequest{op: op, at: time.Now()})
		c.mu.Unlock()
	}
	sdk := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = c.ft }, quickRetries)
	all := []lock.Option{
		lock.WithOwnerName(fmt.Sprintf("go-%s-%d", t.Name(), e.seq.Add(1))),
		lock.WithLeaseDuration(testLease),
		lock.WithHeartbeatPeriod(testHeartbeat),
		lock.WithRefreshPeriod(testRefresh),
		lock.WithRequestTimeout(testTimeout),
	}
	if e.pk != ddbtest.DefaultPartitionKey {
		all = append(all, lock.WithPartitionKeyAttribute(e.pk))
	}
	if e.sk != "" {
		all = append(all, lock.WithSortKeyAttribute(e.sk))
	}
	lc, err := lock.NewOn(sdk, e.table, append(all, opts...)...)
	if err != nil {
		t.Fatalf("lock.New: %v", err)
	}
	c.Client = lc
	// The table check, which the client otherwise makes before its first
	// request: the tests count the requests of the operations they make.
	if err := lock.CheckTable(t.Context(), lc); err != nil {
		t.Fatalf("CheckTable: %v", err)
	}
	c.ft.Reset()
	c.mu.Lock()
	c.sent = nil
	c.mu.Unlock()
	t.Cleanup(func() {
		c.ft.Clear()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := lc.Close(ctx); err != nil {
			t.Errorf("Close of %s: %v", lc.Identity(), err)
		}
		c.ft.CloseIdleConnections()
	})
	return c
}

// lastSent returns when the last request of op left before t.
func (c *ddbClient) lastSent(op string, before time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var last time.Time
	for _, r := range c.sent {
		if r.op == op && r.at.Before(before) {
			last = r.at
		}
	}
	return last
}

// wantCounts checks the requests c sent since the last check (or since it
// was created) and starts counting again.
func (c *ddbClient) wantCounts(t *testing.T, what string, want map[string]int) {
	t.Helper()
	got := c.ft.Counts()
	c.ft.Reset()
	for op, n := range got {
		if n == 0 {
			delete(got, op)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: requests %v, want %v", what, got, want)
		return
	}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%s: requests %v, want %v", what, got, want)
			return
		}
	}
}

func mustAcquire(t *testing.T, c *ddbClient, key string, opts ...lock.AcquireOption) *lock.Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	l, err := c.Acquire(ctx, key, opts...)
	if err != nil {
		t.Fatalf("Acquire(%q) by %s: %v", key, c.Identity(), err)
	}
	return l
}

func mustRelease(t *testing.T, l *lock.Lock, opts ...lock.ReleaseOption) {
	t.Helper()
	if err := l.Release(t.Context(), opts...); err != nil {
		t.Fatalf("Release(%q): %v", l.Key(), err)
	}
}

func mustHeartbeat(t *testing.T, l *lock.Lock) {
	t.Helper()
	if err := l.Heartbeat(t.Context()); err != nil {
		t.Fatalf("Heartbeat(%q): %v", l.Key(), err)
	}
}

func mustSetData(t *testing.T, l *lock.Lock, data []byte) {
	t.Helper()
	if err := l.SetData(t.Context(), data); err != nil {
		t.Fatalf("SetData(%q): %v", l.Key(), err)
	}
}

// ended reports whether the lock's Done channel is closed.
func ended(l *lock.Lock) bool {
	select {
	case <-l.Done():
		return true
	default:
		return false
	}
}

// lostError returns err as a *dynalease.LostError, failing the test if it is not.
func lostError(t *testing.T, err error) *dynalease.LostError {
	t.Helper()
	var lost *dynalease.LostError
	if !errors.As(err, &lost) || !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("error %v (%T) is not a *dynalease.LostError matching ErrLost", err, err)
	}
	return lost
}

// eventually polls cond until it holds or d has passed.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v, still not: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawKey returns the DynamoDB key of a row.
func (e *ddbEnv) rawKey(key, sort string) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{e.pk: &types.AttributeValueMemberS{Value: key}}
	if e.sk != "" {
		k[e.sk] = &types.AttributeValueMemberS{Value: sort}
	}
	return k
}

// item reads a row with a consistent GetItem; nil when there is none.
func (e *ddbEnv) item(key string) map[string]types.AttributeValue {
	e.t.Helper()
	return e.sortedItem(key, "")
}

func (e *ddbEnv) sortedItem(key, sort string) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(e.table),
		Key:            e.rawKey(key, sort),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		e.t.Fatalf("raw GetItem %q: %v", key, err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// put writes an item unconditionally.
func (e *ddbEnv) put(item map[string]types.AttributeValue) {
	e.t.Helper()
	if _, err := e.raw.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: item}); err != nil {
		e.t.Fatalf("raw PutItem: %v", err)
	}
}

// remove deletes a row unconditionally, as DynamoDB's TTL or an operator
// would.
func (e *ddbEnv) remove(key string) {
	e.t.Helper()
	if _, err := e.raw.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: e.rawKey(key, "")}); err != nil {
		e.t.Fatalf("raw DeleteItem: %v", err)
	}
}

// str returns a string attribute; "" when absent or of another type.
func str(item map[string]types.AttributeValue, attr string) string {
	if v, ok := item[attr].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// rawData returns the row's data attribute, failing unless it is absent or
// binary.
func rawData(t *testing.T, item map[string]types.AttributeValue) []byte {
	t.Helper()
	v, ok := item["data"]
	if !ok {
		return nil
	}
	b, ok := v.(*types.AttributeValueMemberB)
	if !ok {
		t.Fatalf("data attribute is %T, want binary (B)", v)
	}
	return b.Value
}

func wantData(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if want == "" {
		if got != nil {
			t.Errorf("%s: data %q, want none", what, got)
		}
		return
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("%s: data %q, want %q", what, got, want)
	}
}

// checkJavaReadable checks that a row we wrote has what the AWS Java
// DynamoDB Lock Client needs to read it, even only to list it: ownerName
// (S), leaseDuration (S, milliseconds in digits), recordVersionNumber (S),
// data only as binary, and isReleased only as "1" and only when released.
func checkJavaReadable(t *testing.T, what string, item map[string]types.AttributeValue, owner string, lease time.Duration, released bool) {
	t.Helper()
	if item == nil {
		t.Fatalf("%s: no row", what)
	}
	for _, attr := range []string{"ownerName", "leaseDuration", "recordVersionNumber"} {
		if _, ok := item[attr].(*types.AttributeValueMemberS); !ok || str(item, attr) == "" {
			t.Errorf("%s: %s is %#v, want a non-empty string (S)", what, attr, item[attr])
		}
	}
	if got := str(item, "ownerName"); got != owner {
		t.Errorf("%s: ownerName %q, want %q", what, got, owner)
	}
	ld := str(item, "leaseDuration")
	if strings.Trim(ld, "0123456789") != "" || ld != strconv.FormatInt(lease.Milliseconds(), 10) {
		t.Errorf("%s: leaseDuration %q, want %q (milliseconds)", what, ld, strconv.FormatInt(lease.Milliseconds(), 10))
	}
	if _, err := uuid.Parse(str(item, "recordVersionNumber")); err != nil {
		t.Errorf("%s: recordVersionNumber %q is not a UUID: %v", what, str(item, "recordVersionNumber"), err)
	}
	if v, ok := item["data"]; ok {
		if _, ok := v.(*types.AttributeValueMemberB); !ok {
			t.Errorf("%s: data is %T, want binary (B)", what, v)
		}
	}
	v, ok := item["isReleased"]
	switch {
	case released && (!ok || str(item, "isReleased") != "1"):
		t.Errorf("%s: isReleased %#v, want the string \"1\"", what, v)
	case !released && ok:
		t.Errorf("%s: isReleased %#v on a held row, want it absent", what, v)
	}
}

// checkValidFromSend checks that the lock's validity is counted from before
// its last confirmed write left the client, never from its answer: the
// start of the validity (ValidUntil − validity) lies no later than when the
// latest UpdateItem left, and not long before it.
func checkValidFromSend(t *testing.T, c *ddbClient, l *lock.Lock, validity time.Duration, what string) {
	t.Helper()
	v := l.ValidUntil()
	last := c.lastSent("UpdateItem", time.Now())
	if v.IsZero() || last.IsZero() {
		t.Fatalf("%s: ValidUntil %v, last write %v", what, v, last)
	}
	from := v.Add(-validity)
	if from.After(last) {
		t.Errorf("%s: validity counted from %v after the last write left: from its answer, not its send time", what, from.Sub(last))
	}
	if last.Sub(from) > testHeartbeat+slack {
		t.Errorf("%s: validity counted from %v before the last write left", what, last.Sub(from))
	}
}

func TestDynamoDBRequestsPerOperation(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient(lock.WithHeartbeatPeriod(0)) // every request below is the test's own

	l := mustAcquire(t, c, "k")
	c.wantCounts(t, "uncontended Acquire of a missing row", map[string]int{"UpdateItem": 1})
	checkValidFromSend(t, c, l, untimedValidity, "Acquire")
	checkJavaReadable(t, "after Acquire", e.item("k"), c.Identity(), untimedLease, false)
	mustHeartbeat(t, l)
	c.wantCounts(t, "Heartbeat", map[string]int{"UpdateItem": 1})
	checkValidFromSend(t, c, l, untimedValidity, "Heartbeat")
	mustRelease(t, l)
	c.wantCounts(t, "Release", map[string]int{"UpdateItem": 1})
	checkJavaReadable(t, "after Release", e.item("k"), c.Identity(), untimedLease, true)

	l = mustAcquire(t, c, "k", lock.WithDeleteOnRelease())
	c.wantCounts(t, "Acquire of a released row", map[string]int{"UpdateItem": 1})
	mustRelease(t, l)
	c.wantCounts(t, "Release with WithDeleteOnRelease", map[string]int{"DeleteItem": 1})
	if it := e.item("k"); it != nil {
		t.Errorf("row after a deleting Release: %v", it)
	}
	l = mustAcquire(t, c, "k", lock.WithDeleteOnRelease())
	mustRelease(t, l, lock.ReleaseDelete(false))
	c.wantCounts(t, "Acquire + Release with ReleaseDelete(false)", map[string]int{"UpdateItem": 2})
	checkJavaReadable(t, "after ReleaseDelete(false)", e.item("k"), c.Identity(), untimedLease, true)
}

func TestDynamoDBSteadyLockSendsOneWritePerHeartbeatAndNoReads(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient()
	l := mustAcquire(t, c, "steady")
	c.ft.Reset()
	start := time.Now()
	for time.Since(start) < 6*testHeartbeat+testHeartbeat/2 && !t.Failed() {
		time.Sleep(testHeartbeat / 5)
		checkValidFromSend(t, c, l, untimedValidity, "background heartbeat")
	}
	counts := c.ft.Counts()
	elapsed := time.Since(start)
	// Never more than one heartbeat per period. A loaded machine delays
	// heartbeats (each is due a period after the last one started), so
	// the lower bound is only that they ran; the figure is logged.
	periods := int(elapsed / testHeartbeat)
	t.Logf("%d heartbeats in %v (%d periods of %v)", counts["UpdateItem"], elapsed, periods, testHeartbeat)
	if n := counts["UpdateItem"]; n < 1 || n > periods+1 {
		t.Errorf("%d heartbeats in %v, want at least one and at most one per %v period (%d)", n, elapsed, testHeartbeat, periods+1)
	}
	delete(counts, "UpdateItem")
	if len(counts) != 0 {
		t.Errorf("a steady lock sent %v besides its heartbeats", counts)
	}
	if !l.IsHeld() || ended(l) {
		t.Fatalf("lock not held: %v", l.Err())
	}
	eventually(t, patience, "the row carries the lock's RVN", func() bool { return str(e.item("steady"), "recordVersionNumber") == l.RVN() })
	checkJavaReadable(t, "after heartbeats", e.item("steady"), c.Identity(), untimedLease, false)
}

func TestDynamoDBData(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient(lock.WithHeartbeatPeriod(0))
	rowData := func() []byte { return rawData(t, e.item("d")) }

	l := mustAcquire(t, c, "d", lock.WithData([]byte("one")))
	wantData(t, "WithData", rowData(), "one")
	wantData(t, "WithData (Lock.Data)", l.Data(), "one")
	mustHeartbeat(t, l)
	wantData(t, "plain heartbeat", rowData(), "one")
	mustSetData(t, l, []byte("two"))
	wantData(t, "SetData", rowData(), "two")
	wantData(t, "SetData (Lock.Data)", l.Data(), "two")
	mustSetData(t, l, nil)
	if it := e.item("d"); it["data"] != nil {
		t.Errorf("SetData(nil) left data %#v", it["data"])
	}
	wantData(t, "SetData(nil) (Lock.Data)", l.Data(), "")
	mustSetData(t, l, []byte("three"))
	mustRelease(t, l, lock.ReleaseWithData([]byte("parting")))
	it := e.item("d")
	wantData(t, "ReleaseWithData", rawData(t, it), "parting")
	checkJavaReadable(t, "after ReleaseWithData", it, c.Identity(), untimedLease, true)

	l = mustAcquire(t, c, "d", lock.WithReplaceData(false), lock.WithData([]byte("ignored")))
	wantData(t, "WithReplaceData(false)", rowData(), "parting")
	wantData(t, "WithReplaceData(false) (Lock.Data)", l.Data(), "parting")
	mustHeartbeat(t, l)
	wantData(t, "heartbeat after WithReplaceData(false)", rowData(), "parting")
	mustRelease(t, l)
	wantData(t, "plain Release", rowData(), "parting")

	l = mustAcquire(t, c, "d") // replaces the data with none
	wantData(t, "Acquire without data", rowData(), "")
	wantData(t, "Acquire without data (Lock.Data)", l.Data(), "")
	info, err := c.Get(t.Context(), "d")
	if err != nil {
		t.Fatal(err)
	}
	wantData(t, "Get", info.Data, "")
}

func TestDynamoDBAcquireOnlyIfExists(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient(lock.WithHeartbeatPeriod(0))

	_, err := c.Acquire(t.Context(), "ghost", lock.WithAcquireOnlyIfExists())
	if !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Acquire of a missing row with WithAcquireOnlyIfExists = %v, want ErrNotFound", err)
	}
	if it := e.item("ghost"); it != nil {
		t.Fatalf("WithAcquireOnlyIfExists created a row: %v", it)
	}
	if _, err := c.TryAcquire(t.Context(), "ghost", lock.WithAcquireOnlyIfExists()); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("TryAcquire of a missing row with WithAcquireOnlyIfExists = %v, want ErrNotFound", err)
	}
	if it := e.item("ghost"); it != nil {
		t.Fatalf("WithAcquireOnlyIfExists created a row: %v", it)
	}

	mustRelease(t, mustAcquire(t, c, "kept"))
	c.ft.Reset()
	l := mustAcquire(t, c, "kept", lock.WithAcquireOnlyIfExists())
	c.wantCounts(t, "WithAcquireOnlyIfExists on a released row", map[string]int{"UpdateItem": 1})
	if !l.IsHeld() {
		t.Fatal("not held")
	}
	checkJavaReadable(t, "after WithAcquireOnlyIfExists", e.item("kept"), c.Identity(), untimedLease, false)
}

func TestDynamoDBAttributes(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient()
	attrs := map[string]any{
		"region":   &types.AttributeValueMemberS{Value: "eu-west-1"},
		"priority": &types.AttributeValueMemberN{Value: "7"},
	}
	l := mustAcquire(t, c, "a", lock.WithAttributes(attrs))
	check := func(what string, item map[string]any, region string) {
		t.Helper()
		if s, ok := item["region"].(*types.AttributeValueMemberS); !ok || s.Value != region {
			t.Errorf("%s: region %#v, want %q", what, item["region"], region)
		}
		if n, ok := item["priority"].(*types.AttributeValueMemberN); !ok || n.Value != "7" {
			t.Errorf("%s: priority %#v, want N 7", what, item["priority"])
		}
	}
	raw := func(key string) map[string]any {
		out := map[string]any{}
		for name, v := range e.item(key) {
			out[name] = v
		}
		return out
	}
	check("raw row", raw("a"), "eu-west-1")
	check("Lock.Attributes", l.Attributes(), "eu-west-1")
	info, err := c.Get(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	check("Get", info.Attributes, "eu-west-1")

	rvn := l.RVN()
	eventually(t, patience, "a background heartbeat", func() bool { return str(e.item("a"), "recordVersionNumber") != rvn })
	check("after heartbeats", raw("a"), "eu-west-1")

	mustRelease(t, l)
	l = mustAcquire(t, c, "a", lock.WithAttributes(map[string]any{"region": &types.AttributeValueMemberS{Value: "us-east-2"}}))
	check("re-acquired naming one attribute", raw("a"), "us-east-2")
	mustRelease(t, l)

	if _, err := c.Acquire(t.Context(), "b", lock.WithAttributes(map[string]any{"ownerName": &types.AttributeValueMemberS{Value: "x"}})); !errors.Is(err, dynalease.ErrInvalid) {
		t.Errorf("a reserved attribute name: %v, want it refused", err)
	}
	if _, err := c.Acquire(t.Context(), "b", lock.WithAttributes(map[string]any{"app": "not a DynamoDB value"})); !errors.Is(err, dynalease.ErrInvalid) {
		t.Errorf("an attribute value DynamoDB cannot store: %v, want it refused", err)
	}
}

func TestDynamoDBSortKeyTable(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{SortKey: "sortKey"})
	c := e.newClient(lock.WithHeartbeatPeriod(0))
	ctx := t.Context()

	if _, err := c.Acquire(ctx, "p1"); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Acquire without WithSortKeyValue on a sort-key table = %v, want it refused", err)
	}
	l1a := mustAcquire(t, c, "p1", lock.WithSortKeyValue("a"))
	l1b := mustAcquire(t, c, "p1", lock.WithSortKeyValue("b"))
	l2a := mustAcquire(t, c, "p2", lock.WithSortKeyValue("a"))
	if l1a.Key() != "p1" || l1a.SortKey() != "a" {
		t.Errorf("lock key %q/%q, want p1/a", l1a.Key(), l1a.SortKey())
	}
	for _, l := range []*lock.Lock{l1a, l1b, l2a} {
		it := e.sortedItem(l.Key(), l.SortKey())
		checkJavaReadable(t, "sort-key row "+l.Key()+"/"+l.SortKey(), it, c.Identity(), untimedLease, false)
		if str(it, "recordVersionNumber") != l.RVN() {
			t.Errorf("row %s/%s has RVN %q, want %q", l.Key(), l.SortKey(), str(it, "recordVersionNumber"), l.RVN())
		}
	}

	mustRelease(t, l1b)
	infos, err := c.List(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 {
		t.Fatalf("List(p1) = %+v, want the two rows of p1", infos)
	}
	slices.SortFunc(infos, func(a, b lock.Info) int { return strings.Compare(a.SortKey, b.SortKey) })
	if infos[0].Key != "p1" || infos[0].SortKey != "a" || infos[0].RVN != l1a.RVN() || infos[0].Released ||
		infos[1].Key != "p1" || infos[1].SortKey != "b" || !infos[1].Released || infos[1].HolderIdentity != c.Identity() {
		t.Errorf("List(p1) = %+v", infos)
	}
	all, err := c.List(ctx, "")
	if err != nil || len(all) != 3 {
		t.Errorf("List = %d rows (%v), want 3", len(all), err)
	}
	info, err := c.Get(ctx, "p2", lock.WithSortKeyValue("a"))
	if err != nil || info.RVN != l2a.RVN() || info.SortKey != "a" {
		t.Errorf("Get(p2/a) = %+v, %v", info, err)
	}

	// Rows of one partition are separate locks.
	other := e.newClient(lock.WithHeartbeatPeriod(0))
	if _, err := other.TryAcquire(ctx, "p1", lock.WithSortKeyValue("a")); !errors.Is(err, lock.ErrLocked) {
		t.Errorf("TryAcquire(p1/a) held by another client = %v, want ErrLocked", err)
	}
	if _, err := other.TryAcquire(ctx, "p1", lock.WithSortKeyValue("b")); err != nil {
		t.Errorf("TryAcquire(p1/b), released: %v", err)
	}
	if _, err := other.TryAcquire(ctx, "p1", lock.WithSortKeyValue("c")); err != nil {
		t.Errorf("TryAcquire(p1/c), missing: %v", err)
	}
	if str(e.sortedItem("p1", "a"), "ownerName") != c.Identity() {
		t.Error("p1/a changed hands")
	}
}

func TestDynamoDBListManyRows(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient(lock.WithHeartbeatPeriod(0))
	// Five rows of 250 KB make the table larger than one 1 MB Scan page.
	const small, big = 40, 5
	bigData := bytes.Repeat([]byte("x"), 250*1024)
	type want struct {
		released bool
		data     int
		rvn      string
	}
	wants := map[string]*want{}
	for i := range small + big {
		key := fmt.Sprintf("row-%02d", i)
		var opts []lock.AcquireOption
		w := &want{}
		if i >= small {
			opts = append(opts, lock.WithData(bigData))
			w.data = len(bigData)
		}
		l := mustAcquire(t, c, key, opts...)
		w.rvn = l.RVN()
		if i%3 == 0 {
			mustRelease(t, l)
			w.released, w.rvn = true, ""
		}
		wants[key] = w
	}
	c.ft.Reset()
	infos, err := c.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if n := c.ft.Count("Scan"); n < 2 {
		t.Errorf("List sent %d Scan requests; the table needs at least two pages", n)
	}
	seen := map[string]bool{}
	for _, in := range infos {
		w := wants[in.Key]
		switch {
		case w == nil || seen[in.Key]:
			t.Errorf("List returned unexpected or repeated row %q", in.Key)
			continue
		case in.Err != nil:
			t.Errorf("row %q: %v", in.Key, in.Err)
		case in.HolderIdentity != c.Identity() || in.LeaseDuration != untimedLease || in.Released != w.released ||
			len(in.Data) != w.data || in.Acquisitions != 1 || in.RVN == "" || (w.rvn != "" && in.RVN != w.rvn):
			t.Errorf("row %q = {Owner %q, Lease %v, Released %v, %d bytes of data, Acquisitions %d, RVN %q}, want {%q, %v, %v, %d, 1, %q}",
				in.Key, in.HolderIdentity, in.LeaseDuration, in.Released, len(in.Data), in.Acquisitions, in.RVN,
				c.Identity(), untimedLease, w.released, w.data, w.rvn)
		}
		seen[in.Key] = true
	}
	if len(seen) != len(wants) {
		t.Errorf("List returned %d distinct rows, want %d", len(seen), len(wants))
	}
}

func TestDynamoDBGetDoesNotTakeTheLock(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	holder := e.newClient()
	reader := e.newClient()
	l := mustAcquire(t, holder, "g", lock.WithData([]byte("x")))
	reader.ft.Reset()
	info, err := reader.Get(t.Context(), "g")
	if err != nil {
		t.Fatal(err)
	}
	reader.wantCounts(t, "Get", map[string]int{"GetItem": 1})
	it := e.item("g")
	if info.Key != "g" || info.HolderIdentity != holder.Identity() || info.LeaseDuration != untimedLease || info.Released ||
		string(info.Data) != "x" || info.Acquisitions != 1 || info.Err != nil {
		t.Errorf("Get = %+v", info)
	}
	if info.RVN == "" || (info.RVN != str(it, "recordVersionNumber") && info.RVN != l.RVN()) {
		t.Errorf("Get RVN %q; the row has %q", info.RVN, str(it, "recordVersionNumber"))
	}
	if str(it, "ownerName") != holder.Identity() || !l.IsHeld() || ended(l) {
		t.Errorf("Get disturbed the lock: row owner %q, held %v", str(it, "ownerName"), l.IsHeld())
	}
	if _, err := reader.Get(t.Context(), "nothing"); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Errorf("Get of a missing row = %v, want ErrNotFound", err)
	}
	if it := e.item("nothing"); it != nil {
		t.Errorf("Get created a row: %v", it)
	}
}

// ttlSeconds returns the row's ttl attribute, failing unless it is a
// number.
func ttlSeconds(t *testing.T, item map[string]types.AttributeValue) int64 {
	t.Helper()
	n, ok := item["ttl"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("ttl attribute is %#v, want a number (N)", item["ttl"])
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatalf("ttl %q: %v", n.Value, err)
	}
	return v
}

func TestDynamoDBTTL(t *testing.T) {
	t.Parallel()
	raw := ddbtest.Client(t)
	name := "lock-ttl-" + uuid.NewString()
	if err := dynamodbstore.CreateTable(t.Context(), raw, name, dynamodbstore.TableOptions{TTLAttribute: "ttl", PollInterval: 20 * time.Millisecond}); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() { ddbtest.DeleteTable(t, raw, name) })
	e := &ddbEnv{t: t, raw: raw, table: name, pk: ddbtest.DefaultPartitionKey}
	const slackTTL = time.Hour
	c := e.newClient(lock.WithTTL(slackTTL))
	bounds := func(from, to time.Time) (int64, int64) {
		return from.Add(untimedLease + slackTTL).Unix(), to.Add(untimedLease+slackTTL).Unix() + 1
	}

	before := time.Now()
	l := mustAcquire(t, c, "t")
	lo, hi := bounds(before, time.Now())
	first := ttlSeconds(t, e.item("t"))
	if first < lo || first > hi {
		t.Errorf("ttl after Acquire = %d, want in [%d, %d] (wall clock + lease + %v)", first, lo, hi, slackTTL)
	}
	// Background heartbeats refresh it (the ttl has whole seconds).
	eventually(t, patience, "background heartbeats move the ttl", func() bool { return ttlSeconds(t, e.item("t")) > first })
	before = time.Now()
	mustHeartbeat(t, l)
	after := e.item("t")
	lo, hi = bounds(before, time.Now())
	if got := ttlSeconds(t, after); got < lo || got > hi {
		t.Errorf("ttl after Heartbeat = %d, want in [%d, %d]", got, lo, hi)
	}
	checkJavaReadable(t, "row with a TTL", after, c.Identity(), untimedLease, false)

	// A client without WithTTL removes a TTL it finds, when it takes a
	// released row at once and when it takes over a stale one.
	plain := e.newClient()
	foreignTTL := &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)}
	released := javaItem("released", "java-host", uuid.NewString(), 20*time.Second, nil, true)
	released["ttl"] = foreignTTL
	stale := javaItem("stale", "java-host", uuid.NewString(), 300*time.Millisecond, nil, false)
	stale["ttl"] = foreignTTL
	e.put(released)
	e.put(stale)
	for _, key := range []string{"released", "stale"} {
		mustAcquire(t, plain, key)
		it := e.item(key)
		if v, ok := it["ttl"]; ok {
			t.Errorf("%s row taken without WithTTL keeps the foreign ttl %#v", key, v)
		}
		checkJavaReadable(t, key+" row taken", it, plain.Identity(), untimedLease, false)
	}
}

// Regression tests: each test below reproduces a bug that has been fixed.

func TestDynamoDBAcquireOfAnUndecodableRowFails(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient()
	// A row of cirello/dynamolock, which writes leaseDuration as a Go
	// duration string: neither this client nor the Java client can read it.
	it := javaItem("bad", "cirello-host", uuid.NewString(), time.Second, nil, false)
	it["leaseDuration"] = &types.AttributeValueMemberS{Value: "20s"}
	e.put(it)
	if _, err := c.TryAcquire(t.Context(), "bad"); !errors.Is(err, resourcelock.ErrPermanent) {
		t.Errorf("TryAcquire = %v, want an invalid record (resourcelock.ErrPermanent)", err)
	}
	c.ft.Reset()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := c.Acquire(ctx, "bad"); !errors.Is(err, resourcelock.ErrPermanent) {
		t.Errorf("Acquire = %v after requests %v, want an invalid record (resourcelock.ErrPermanent)", err, c.ft.Counts())
	}
}

// The table's own attribute names (its key, the Java client's, the
// library's, the TTL) are refused as attributes, before any request.
func TestDynamoDBReservedAttributeNamesAreRefused(t *testing.T) {
	t.Parallel()
	e := newDDBEnv(t, ddbtest.TableSpec{})
	c := e.newClient()
	for _, name := range []string{"key", "ownerName", "recordVersionNumber", "leaseDuration", "data", "isReleased", "ttl", "acquisitionId", "fenceGeneration"} {
		_, err := c.Acquire(t.Context(), "k", lock.WithAttributes(map[string]any{name: &types.AttributeValueMemberS{Value: "x"}}))
		if !errors.Is(err, dynalease.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("WithAttributes(%q) = %v, want refused naming it", name, err)
		}
	}
	c.wantCounts(t, "refused options", map[string]int{})
}
