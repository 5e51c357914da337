package dynamodbstore_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"
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
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/resourcelock"
)

// DynamoDB operation names as faulthttp counts them.
const (
	opGetItem    = "GetItem"
	opUpdateItem = "UpdateItem"
)

var wallClock = time.Date(2026, 11, 21, 12, 30, 45, 123_000_000, time.UTC)

// newRec returns a record for a write with a fresh RVN.
func newRec(lease time.Duration, data string) resourcelock.Record {
	r := resourcelock.Record{
		RVN:           uuid.NewString(),
		LeaseDuration: lease,
		AcquireTime:   wallClock,
		RenewTime:     wallClock.Add(time.Second),
	}
	if data != "" {
		r.Data = []byte(data)
	}
	return r
}

// testCtx returns a context that bounds one test's requests.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fixture is one test's lock table and a client without faults.
type fixture struct {
	c     *dynamodb.Client
	table string
	pk    string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := ddbtest.Client(t)
	return &fixture{c: c, table: ddbtest.NewTable(t, c, ddbtest.TableSpec{}), pk: ddbtest.DefaultPartitionKey}
}

// lock returns a lock on the item name of f's table, sending through client
// (f's clean client when nil).
func (f *fixture) lock(t *testing.T, client dynamodbstore.StoreAPI, name, id string, edit ...func(*leaseConfig)) *keylease.Lease {
	t.Helper()
	if client == nil {
		client = f.c
	}
	cfg := leaseConfig{Client: client, Table: f.table, Name: name, Identity: id}
	for _, e := range edit {
		e(&cfg)
	}
	l, err := newLease(cfg)
	if err != nil {
		t.Fatalf("dynamodbstore.NewLease: %v", err)
	}
	// The table check, which the store otherwise makes before its first
	// request: the tests count and fault their operations' requests.
	// (It fails when a test broke the client first; the store then
	// checks again at its first request.)
	if s, ok := l.Store().(interface {
		Tables(context.Context) ([]dynamodbstore.TableInfo, error)
	}); ok {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_, _ = s.Tables(ctx)
		cancel()
	}
	return l
}

// quickRetries makes the client retry up to attempts times with a short
// fixed backoff and no retry quota, so retry tests are fast and repeatable.
func quickRetries(attempts int, backoff time.Duration) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return backoff, nil })
			so.RateLimiter = ratelimit.None
		})
	}
}

func noRetries(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// faulty returns a client whose requests go through a new faulthttp
// Transport, with quick retries (three attempts) unless optFns change them.
func (f *fixture) faulty(t *testing.T, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, *faulthttp.Transport) {
	t.Helper()
	ft := faulthttp.New(nil)
	t.Cleanup(ft.CloseIdleConnections)
	fns := append([]func(*dynamodb.Options){
		func(o *dynamodb.Options) { o.HTTPClient = ft },
		quickRetries(3, 10*time.Millisecond),
	}, optFns...)
	return ddbtest.Client(t, fns...), ft
}

func (f *fixture) key(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{f.pk: &types.AttributeValueMemberS{Value: name}}
}

// putRaw stores item as the item name, unconditionally, the way another
// client would.
func (f *fixture) putRaw(t *testing.T, name string, item map[string]types.AttributeValue) {
	t.Helper()
	item = maps.Clone(item)
	maps.Copy(item, f.key(name))
	if _, err := f.c.PutItem(testCtx(t), &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: item}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

// getRaw reads the item name with a strongly consistent GetItem.
func (f *fixture) getRaw(t *testing.T, name string) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.c.GetItem(testCtx(t), &dynamodb.GetItemInput{
		TableName: aws.String(f.table), Key: f.key(name), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	return out.Item
}

func wantCounts(t *testing.T, ft *faulthttp.Transport, what string, want map[string]int) {
	t.Helper()
	if got := ft.Counts(); !maps.Equal(got, want) {
		t.Errorf("%s sent %v, want %v", what, got, want)
	}
	ft.Reset()
}

func wantRecord(t *testing.T, what string, got, want resourcelock.Record) {
	t.Helper()
	if !record.Equal(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func wantS(t *testing.T, item map[string]types.AttributeValue, attr, want string) {
	t.Helper()
	v, ok := item[attr].(*types.AttributeValueMemberS)
	if !ok || v.Value != want {
		t.Errorf("attribute %s = %#v, want S %q", attr, item[attr], want)
	}
}

func wantAbsent(t *testing.T, item map[string]types.AttributeValue, attrs ...string) {
	t.Helper()
	for _, attr := range attrs {
		if v, ok := item[attr]; ok {
			t.Errorf("attribute %s = %#v, want it absent", attr, v)
		}
	}
}

// On a table with a sort key, leases that share one partition key value
// and differ by sort key value are items of their own.
func TestDynamoDBConformanceSortKey(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	spec := ddbtest.TableSpec{PartitionKey: "lockGroup", SortKey: "lockName"}
	table := ddbtest.NewTable(t, c, spec)
	group := "group-" + uuid.NewString()
	newLock := func(name, id string) *keylease.Lease {
		l, err := newLease(leaseConfig{
			Client: c, Table: table, Name: group, Identity: id,
			PartitionKeyAttribute: spec.PartitionKey, SortKeyAttribute: spec.SortKey, SortKeyValue: name,
		})
		if err != nil {
			panic(err)
		}
		return l
	}
	t.Run("ItemKeyedBySortKey", func(t *testing.T) {
		name := uuid.NewString()
		l := newLock(name, "a")
		if _, err := l.Create(testCtx(t), newRec(time.Second, "")); err != nil {
			t.Fatal(err)
		}
		out, err := c.GetItem(testCtx(t), &dynamodb.GetItemInput{
			TableName: aws.String(table),
			Key: map[string]types.AttributeValue{
				spec.PartitionKey: &types.AttributeValueMemberS{Value: group},
				spec.SortKey:      &types.AttributeValueMemberS{Value: name},
			},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		wantS(t, out.Item, "ownerName", "a")
		if !strings.Contains(l.Describe(), group) || !strings.Contains(l.Describe(), name) {
			t.Errorf("Describe() = %q, want it to name partition %q and sort %q", l.Describe(), group, name)
		}
	})
}

const (
	javaHeldOwner = "host-b.example-9d2e"
	javaHeldRVN   = "eaada884-0b78-4ed5-9fa1-e3d90b113f0f"
)

func TestDynamoDBReadsJavaHeldItem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	golden := dynamodbstore.GoldenJavaItems(t)
	for _, tc := range []struct{ item, rvn string }{
		{dynamodbstore.GoldenHeld, javaHeldRVN},
		{dynamodbstore.GoldenHeartbeat, "ae65fc19-b58d-4380-a45f-7273036e9140"},
	} {
		t.Run(tc.item, func(t *testing.T) {
			name := uuid.NewString()
			f.putRaw(t, name, golden[tc.item])
			l := f.lock(t, nil, name, "go-host")
			got, err := l.Get(testCtx(t))
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			wantRecord(t, "Java item", got.Record, resourcelock.Record{
				HolderIdentity: javaHeldOwner,
				RVN:            tc.rvn,
				LeaseDuration:  6000 * time.Millisecond,
				Data:           []byte("java:host-b.example-9d2e"),
			})
			if got.Released || got.Acquisitions != 0 || !got.AcquireTime.IsZero() || !got.RenewTime.IsZero() {
				t.Fatalf("Java item decoded with our attributes: %+v", got)
			}
			if _, err := l.Create(testCtx(t), newRec(time.Second, "")); !errors.Is(err, resourcelock.ErrConflict) {
				t.Fatalf("Create over a held Java lock: %v, want ErrConflict", err)
			}
			if raw := f.getRaw(t, name); !maps.EqualFunc(raw, withKey(golden[tc.item], f.pk, name), avEqual) {
				t.Fatalf("a failed Create changed the Java item to %v", raw)
			}
		})
	}
}

func withKey(item map[string]types.AttributeValue, pk, name string) map[string]types.AttributeValue {
	item = maps.Clone(item)
	item[pk] = &types.AttributeValueMemberS{Value: name}
	return item
}

func avEqual(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	}
	return false
}

func TestDynamoDBTakesReleasedJavaRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	name := uuid.NewString()
	f.putRaw(t, name, dynamodbstore.GoldenJavaItems(t)[dynamodbstore.GoldenReleasedKept])
	client, ft := f.faulty(t)
	l := f.lock(t, client, name, "go-host")

	got, err := l.Get(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	wantRecord(t, "released Java row", got.Record, resourcelock.Record{
		HolderIdentity: "host-a.example-3f1c",
		RVN:            "4a359dcd-62df-466e-ab75-0ecd2c158288",
		LeaseDuration:  20 * time.Second,
		Released:       true,
		Data:           []byte("java:host-a.example-3f1c"),
	})
	ft.Reset()

	in := newRec(3*time.Second, "")
	stored, err := l.Create(testCtx(t), in)
	if err != nil {
		t.Fatalf("Create over a released Java row: %v", err)
	}
	wantCounts(t, ft, "Create over a released row", map[string]int{opUpdateItem: 1})
	want := in
	want.HolderIdentity = "go-host"
	want.Acquisitions = 1
	want.AcquisitionID = in.RVN
	wantRecord(t, "Create result", stored.Record, want)
	raw := f.getRaw(t, name)
	wantAbsent(t, raw, "isReleased", "data")
	wantS(t, raw, "ownerName", "go-host")
	wantS(t, raw, "recordVersionNumber", in.RVN)
	wantS(t, raw, "leaseDuration", "3000")
}

func TestDynamoDBTakesOverJavaLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	name := uuid.NewString()
	f.putRaw(t, name, dynamodbstore.GoldenJavaItems(t)[dynamodbstore.GoldenHeld])
	l := f.lock(t, nil, name, "go-host")

	in := newRec(2500*time.Millisecond, "")
	stored, err := l.Update(testCtx(t), resourcelock.Precondition{RVN: javaHeldRVN}, in)
	if err != nil {
		t.Fatalf("takeover of a Java lock: %v", err)
	}
	want := in
	want.HolderIdentity = "go-host"
	want.Acquisitions = 1
	want.AcquisitionID = in.RVN
	wantRecord(t, "takeover result", stored.Record, want)
	wantRecord(t, "Get after takeover", mustGet(t, l), want)

	raw := f.getRaw(t, name)
	wantAbsent(t, raw, "data", "isReleased")
	wantS(t, raw, "ownerName", "go-host")
	wantS(t, raw, "leaseDuration", "2500")
	wantS(t, raw, "recordVersionNumber", in.RVN)
	wantS(t, raw, "acquireTime", "2026-11-21T12:30:45.123Z")
	wantS(t, raw, "renewTime", "2026-11-21T12:30:46.123Z")
	if n, ok := raw["leaderTransitions"].(*types.AttributeValueMemberN); !ok || n.Value != "1" {
		t.Errorf("leaderTransitions = %#v, want N 1", raw["leaderTransitions"])
	}

	// The Java holder's next heartbeat, with its own condition, now fails:
	// it learns that it lost the lock.
	_, err = f.c.UpdateItem(testCtx(t), &dynamodb.UpdateItemInput{
		TableName:                aws.String(f.table),
		Key:                      f.key(name),
		UpdateExpression:         aws.String("SET #ld = :ld, #rvn = :new"),
		ConditionExpression:      aws.String("#rvn = :old AND #owner = :me"),
		ExpressionAttributeNames: map[string]string{"#ld": "leaseDuration", "#rvn": "recordVersionNumber", "#owner": "ownerName"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":ld":  &types.AttributeValueMemberS{Value: "6000"},
			":new": &types.AttributeValueMemberS{Value: uuid.NewString()},
			":old": &types.AttributeValueMemberS{Value: javaHeldRVN},
			":me":  &types.AttributeValueMemberS{Value: javaHeldOwner},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("Java heartbeat after our takeover: %v, want ConditionalCheckFailedException", err)
	}
}

func mustGet(t *testing.T, l keylease.Port) resourcelock.Record {
	t.Helper()
	r, err := l.Get(testCtx(t))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return r.Record
}

// Items we write carry the Java client's attributes with the types it
// reads, and a released row of ours is one the Java client can take.
func TestDynamoDBWritesJavaLayout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	name := uuid.NewString()
	l := f.lock(t, nil, name, "go-host")

	in := newRec(1500*time.Millisecond+time.Nanosecond, "app data")
	first, err := l.Create(testCtx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	raw := f.getRaw(t, name)
	wantS(t, raw, "key", name)
	wantS(t, raw, "ownerName", "go-host")
	wantS(t, raw, "leaseDuration", "1501")
	wantS(t, raw, "recordVersionNumber", in.RVN)
	if b, ok := raw["data"].(*types.AttributeValueMemberB); !ok || string(b.Value) != "app data" {
		t.Errorf("data = %#v, want B %q", raw["data"], "app data")
	}
	wantAbsent(t, raw, "isReleased")
	if n, ok := raw["leaderTransitions"].(*types.AttributeValueMemberN); !ok || n.Value != "1" {
		t.Errorf("leaderTransitions = %#v, want N 1", raw["leaderTransitions"])
	}
	wantS(t, raw, "acquireTime", "2026-11-21T12:30:45.123Z")
	wantS(t, raw, "renewTime", "2026-11-21T12:30:46.123Z")
	if ms, err := strconv.ParseInt(raw["leaseDuration"].(*types.AttributeValueMemberS).Value, 10, 64); err != nil || ms <= 0 {
		t.Errorf("leaseDuration is not what Java's Long.parseLong reads: %v", err)
	}

	// A release keeps the row with isReleased = "1".
	rel := newRec(time.Second, "")
	rel.Released = true
	if _, err := l.Update(testCtx(t), resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "go-host"}, rel); err != nil {
		t.Fatal(err)
	}
	raw = f.getRaw(t, name)
	wantS(t, raw, "isReleased", "1")
	wantS(t, raw, "recordVersionNumber", rel.RVN)
	wantAbsent(t, raw, "data")

	// The Java client acquires a released lock with a conditional PutItem of
	// its own item.
	javaRVN := uuid.NewString()
	_, err = f.c.PutItem(testCtx(t), &dynamodb.PutItemInput{
		TableName: aws.String(f.table),
		Item: map[string]types.AttributeValue{
			"key":                 &types.AttributeValueMemberS{Value: name},
			"ownerName":           &types.AttributeValueMemberS{Value: javaHeldOwner},
			"leaseDuration":       &types.AttributeValueMemberS{Value: "6000"},
			"recordVersionNumber": &types.AttributeValueMemberS{Value: javaRVN},
		},
		ConditionExpression:      aws.String("attribute_exists(#k) AND #r = :one"),
		ExpressionAttributeNames: map[string]string{"#k": "key", "#r": "isReleased"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberS{Value: "1"},
		},
	})
	if err != nil {
		t.Fatalf("Java acquire of our released row: %v", err)
	}
	wantRecord(t, "Java's item", mustGet(t, l), resourcelock.Record{
		HolderIdentity: javaHeldOwner, RVN: javaRVN, LeaseDuration: 6 * time.Second,
	})
}

func TestDynamoDBInvalidItems(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	valid := func() map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"ownerName":           &types.AttributeValueMemberS{Value: "someone"},
			"leaseDuration":       &types.AttributeValueMemberS{Value: "6000"},
			"recordVersionNumber": &types.AttributeValueMemberS{Value: uuid.NewString()},
			"data":                &types.AttributeValueMemberB{Value: []byte("x")},
			"leaderTransitions":   &types.AttributeValueMemberN{Value: "2"},
		}
	}
	// The valid item itself decodes, so each failure below is the edit's.
	name := uuid.NewString()
	f.putRaw(t, name, valid())
	if _, err := f.lock(t, nil, name, "me").Get(testCtx(t)); err != nil {
		t.Fatalf("Get of the valid item: %v", err)
	}

	for _, tc := range []struct {
		name, attr string
		v          types.AttributeValue // nil removes attr
	}{
		{"missing ownerName", "ownerName", nil},
		{"missing recordVersionNumber", "recordVersionNumber", nil},
		{"missing leaseDuration", "leaseDuration", nil},
		{"leaseDuration as N", "leaseDuration", &types.AttributeValueMemberN{Value: "6000"}},
		{"leaseDuration abc", "leaseDuration", &types.AttributeValueMemberS{Value: "abc"}},
		{"leaseDuration -5", "leaseDuration", &types.AttributeValueMemberS{Value: "-5"}},
		{"leaseDuration 0", "leaseDuration", &types.AttributeValueMemberS{Value: "0"}},
		{"leaseDuration Go duration", "leaseDuration", &types.AttributeValueMemberS{Value: "20s"}},
		{"data as S", "data", &types.AttributeValueMemberS{Value: "x"}},
		{"isReleased as BOOL", "isReleased", &types.AttributeValueMemberBOOL{Value: true}},
		{"leaderTransitions as S", "leaderTransitions", &types.AttributeValueMemberS{Value: "2"}},
		{"acquireTime malformed", "acquireTime", &types.AttributeValueMemberS{Value: "yesterday"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := valid()
			if tc.v == nil {
				delete(item, tc.attr)
			} else {
				item[tc.attr] = tc.v
			}
			name := uuid.NewString()
			f.putRaw(t, name, item)
			rec, err := f.lock(t, nil, name, "me").Get(testCtx(t))
			if !errors.Is(err, resourcelock.ErrPermanent) {
				t.Fatalf("Get = %+v, %v; want an invalid record (resourcelock.ErrPermanent)", rec, err)
			}
			if !strings.Contains(err.Error(), tc.attr) {
				t.Errorf("error %q does not name attribute %s", err, tc.attr)
			}
		})
	}
}

func TestDynamoDBMissingTable(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	table := "dynalease-missing-" + uuid.NewString()
	l, err := newLease(leaseConfig{Client: c, Table: table, Name: "lock", Identity: "me"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, resourcelock.ErrPermanent) {
			t.Errorf("%s on a missing table: %v, want a permanent error", op, err)
			return
		}
		if errors.Is(err, resourcelock.ErrConflict) || errors.Is(err, resourcelock.ErrNotFound) {
			t.Errorf("%s on a missing table: %v also matches ErrConflict or ErrNotFound", op, err)
		}
		if !strings.Contains(err.Error(), table) {
			t.Errorf("%s on a missing table: %q does not name the table", op, err)
		}
	}
	_, err = l.Get(testCtx(t))
	check("Get", err)
	_, err = l.Create(testCtx(t), newRec(time.Second, ""))
	check("Create", err)
	_, err = l.Update(testCtx(t), resourcelock.Precondition{RVN: "x"}, newRec(time.Second, ""))
	check("Update", err)
	_, err = l.Update(testCtx(t), resourcelock.Precondition{RVN: "x", HolderIdentity: "me"}, newRec(time.Second, ""))
	check("renewal", err)
}

// countingAPI is a StoreAPI that records calls and answers none of them.
type countingAPI struct {
	mu    sync.Mutex
	calls int
}

var errNoServer = errors.New("countingAPI: no server")

func (c *countingAPI) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return nil, errNoServer
}

func (c *countingAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.count1()
	return nil, errNoServer
}

func (c *countingAPI) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.count1()
	return nil, errNoServer
}

func (c *countingAPI) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.count1()
	return nil, errNoServer
}

func (c *countingAPI) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.count1()
	return nil, errNoServer
}

func (c *countingAPI) count1() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
}

func (c *countingAPI) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// Runs without DynamoDB.
func TestNewDynamoDBValidation(t *testing.T) {
	api := &countingAPI{}
	valid := func() leaseConfig {
		return leaseConfig{Client: api, Table: "locks", Name: "lock", Identity: "me", SkipTableCheck: true}
	}
	for _, tc := range []struct {
		name string
		edit func(*leaseConfig)
	}{
		{"empty name", func(c *leaseConfig) { c.Name = "" }},
		{"name over 2048 bytes", func(c *leaseConfig) { c.Name = strings.Repeat("n", record.MaxNameBytes+1) }},
		{"empty identity", func(c *leaseConfig) { c.Identity = "" }},
		{"identity too long", func(c *leaseConfig) {
			c.Identity = strings.Repeat("i", record.MaxIdentityBytes+1)
		}},
		{"nil client", func(c *leaseConfig) { c.Client = nil }},
		{"empty table", func(c *leaseConfig) { c.Table = "" }},
		{"reserved partition key ownerName", func(c *leaseConfig) { c.PartitionKeyAttribute = "ownerName" }},
		{"reserved partition key recordVersionNumber", func(c *leaseConfig) { c.PartitionKeyAttribute = "recordVersionNumber" }},
		{"reserved sort key isReleased", func(c *leaseConfig) { c.SortKeyAttribute, c.SortKeyValue = "isReleased", "s" }},
		{"sort key equals partition key", func(c *leaseConfig) { c.SortKeyAttribute, c.SortKeyValue = "key", "s" }},
		{"SortKeyValue without SortKey", func(c *leaseConfig) { c.SortKeyValue = "s" }},
		{"SortKey without value", func(c *leaseConfig) { c.SortKeyAttribute = "sk" }},
		{"SortKeyValue over 1024 bytes", func(c *leaseConfig) {
			c.SortKeyAttribute, c.SortKeyValue = "sk", strings.Repeat("s", 1025)
		}},
		{"negative RequestTimeout", func(c *leaseConfig) { c.RequestTimeout = -time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.edit(&cfg)
			l, err := newLease(cfg)
			if !errors.Is(err, dynalease.ErrInvalid) {
				t.Fatalf("dynamodbstore.NewLease = %v, %v; want dynalease.ErrInvalid", l, err)
			}
			if l != nil {
				t.Errorf("dynamodbstore.NewLease returned a lock with its error")
			}
		})
	}

	for _, tc := range []struct {
		name     string
		edit     func(*leaseConfig)
		describe string
	}{
		{"minimal", func(*leaseConfig) {}, "dynamodb:locks/lock"},
		{"name of 2048 bytes", func(c *leaseConfig) { c.Name = strings.Repeat("n", record.MaxNameBytes) }, ""},
		{"custom partition key", func(c *leaseConfig) { c.PartitionKeyAttribute = "lockName" }, "dynamodb:locks/lock"},
		{"sort key", func(c *leaseConfig) { c.SortKeyAttribute, c.SortKeyValue = "sk", "s1" }, "dynamodb:locks/lock/s1"},
		{"request timeout", func(c *leaseConfig) { c.RequestTimeout = time.Millisecond }, ""},
	} {
		t.Run("valid "+tc.name, func(t *testing.T) {
			cfg := valid()
			tc.edit(&cfg)
			l, err := newLease(cfg)
			if err != nil {
				t.Fatalf("dynamodbstore.NewLease: %v", err)
			}
			if l.Identity() != cfg.Identity {
				t.Errorf("Identity() = %q, want %q", l.Identity(), cfg.Identity)
			}
			if tc.describe != "" && l.Describe() != tc.describe {
				t.Errorf("Describe() = %q, want %q", l.Describe(), tc.describe)
			}
		})
	}
	if n := api.count(); n != 0 {
		t.Fatalf("dynamodbstore.NewLease sent %d requests, want none", n)
	}
}

// Runs without DynamoDB: invalid writes are refused before any request.
func TestDynamoDBInvalidWritesSendNothing(t *testing.T) {
	api := &countingAPI{}
	l, err := newLease(leaseConfig{Client: api, Table: "locks", Name: "lock", Identity: "me", SkipTableCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	over := newRec(time.Second, strings.Repeat("d", record.MaxDataBytes+1))
	foreign := newRec(time.Second, "")
	foreign.HolderIdentity = "someone-else"
	bad := map[string]resourcelock.Record{
		"data over MaxDataBytes": over,
		"no RVN":                 {LeaseDuration: time.Second},
		"zero lease":             {RVN: "r"},
		"negative lease":         {RVN: "r", LeaseDuration: -time.Millisecond},
		"lease of 200 years":     {RVN: "r", LeaseDuration: 200 * 365 * 24 * time.Hour},
		"another holder":         foreign,
		"acquire time year 10000": {RVN: "r", LeaseDuration: time.Second,
			AcquireTime: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for what, rec := range bad {
		if _, err := l.Create(context.Background(), rec); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("Create with %s: %v, want dynalease.ErrInvalid", what, err)
		}
		for _, p := range []resourcelock.Precondition{{RVN: "r"}, {RVN: "r", HolderIdentity: "me"}} {
			if _, err := l.Update(context.Background(), p, rec); !errors.Is(err, dynalease.ErrInvalid) {
				t.Errorf("Update %+v with %s: %v, want dynalease.ErrInvalid", p, what, err)
			}
		}
	}
	if _, err := l.Update(context.Background(), resourcelock.Precondition{HolderIdentity: "me"}, newRec(time.Second, "")); !errors.Is(err, dynalease.ErrInvalid) {
		t.Errorf("Update without precondition RVN: %v, want dynalease.ErrInvalid", err)
	}
	if n := api.count(); n != 0 {
		t.Fatalf("invalid writes sent %d requests, want none", n)
	}
	// The counter does count: a valid write reaches it.
	if _, err := l.Create(context.Background(), newRec(time.Second, "")); !errors.Is(err, errNoServer) || api.count() != 1 {
		t.Fatalf("valid Create: %v after %d requests, want errNoServer after 1", err, api.count())
	}
}

func TestDynamoDBOneRequestPerOperation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	client, ft := f.faulty(t)
	name := uuid.NewString()
	a := f.lock(t, client, name, "a")
	b := f.lock(t, client, name, "b")
	ft.Reset() // the two table checks
	ctx := testCtx(t)
	get := map[string]int{opGetItem: 1}
	upd := map[string]int{opUpdateItem: 1}
	// Every read is strongly consistent.
	consistent := ft.Add(faulthttp.Rule{Op: opGetItem, BodyContains: `"ConsistentRead":true`})

	if _, err := a.Get(ctx); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get: %v", err)
	}
	wantCounts(t, ft, "Get of a missing record", get)

	over := newRec(time.Second, strings.Repeat("d", record.MaxDataBytes+1))
	if _, err := a.Create(ctx, over); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Create with too much data: %v", err)
	}
	if _, err := a.Update(ctx, resourcelock.Precondition{RVN: "x"}, over); !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Update with too much data: %v", err)
	}
	wantCounts(t, ft, "writes with too much data", map[string]int{})

	first, err := a.Create(ctx, newRec(time.Second, "x"))
	if err != nil {
		t.Fatal(err)
	}
	wantCounts(t, ft, "Create", upd)

	if _, err := a.Get(ctx); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, ft, "Get", get)

	if _, err := b.Create(ctx, newRec(time.Second, "")); !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("Create while held: %v", err)
	}
	wantCounts(t, ft, "conflicting Create", upd)

	renewed, err := a.Update(ctx, resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "a"}, newRec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	wantCounts(t, ft, "renewal", upd)

	taken, err := b.Update(ctx, resourcelock.Precondition{RVN: renewed.RVN}, newRec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	wantCounts(t, ft, "takeover", upd)

	rel := newRec(time.Second, "")
	rel.Released = true
	if _, err := b.Update(ctx, resourcelock.Precondition{RVN: taken.RVN, HolderIdentity: "b"}, rel); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, ft, "release", upd)

	if _, err := a.Create(ctx, newRec(time.Second, "")); err != nil {
		t.Fatalf("Create over a released record: %v", err)
	}
	wantCounts(t, ft, "Create over a released record", upd)

	if n := consistent.Hits(); n != 2 {
		t.Errorf("%d of 2 GetItem requests were strongly consistent", n)
	}
}

// RequestTimeout bounds a whole operation, the SDK's retries included.
func TestDynamoDBRequestTimeout(t *testing.T) {
	t.Parallel()
	const (
		timeout = 300 * time.Millisecond
		delay   = 30 * time.Second
		// Well above timeout (a busy machine adds seconds), well below
		// delay: this proves the call did not wait for the fault, not how
		// fast it is.
		bound = 10 * time.Second
	)
	f := newFixture(t)
	withTimeout := func(c *leaseConfig) { c.RequestTimeout = timeout }
	timed := func(t *testing.T, what string, call func() error) {
		t.Helper()
		start := time.Now()
		err := call()
		elapsed := time.Since(start)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want context.DeadlineExceeded", what, err)
		}
		if errors.Is(err, resourcelock.ErrConflict) {
			t.Errorf("%s: %v matches ErrConflict", what, err)
		}
		if elapsed >= bound {
			t.Errorf("%s took %v; the %v timeout did not bound it", what, elapsed, timeout)
		}
	}

	t.Run("request held before sending", func(t *testing.T) {
		t.Parallel()
		client, ft := f.faulty(t)
		l := f.lock(t, client, uuid.NewString(), "me", withTimeout)
		ft.Add(faulthttp.Rule{Fault: faulthttp.Delay(delay)})
		timed(t, "Get", func() error { _, err := l.Get(context.Background()); return err })
		timed(t, "Create", func() error { _, err := l.Create(context.Background(), newRec(time.Second, "")); return err })
		timed(t, "Update", func() error {
			_, err := l.Update(context.Background(), resourcelock.Precondition{RVN: "x"}, newRec(time.Second, ""))
			return err
		})
	})

	t.Run("response held after the write landed", func(t *testing.T) {
		t.Parallel()
		client, ft := f.faulty(t)
		ft.Add(faulthttp.Rule{Op: opUpdateItem, Fault: faulthttp.DelayResponse(delay)})
		name := uuid.NewString()
		l := f.lock(t, client, name, "me", withTimeout)
		in := newRec(time.Second, "")
		timed(t, "Create", func() error { _, err := l.Create(context.Background(), in); return err })
		// The write landed although the caller saw a timeout.
		if got := mustGet(t, f.lock(t, nil, name, "observer")); got.RVN != in.RVN {
			t.Errorf("record after the timed-out Create carries RVN %q, want ours %q", got.RVN, in.RVN)
		}
	})

	t.Run("retries included", func(t *testing.T) {
		t.Parallel()
		// Without the bound, 1000 attempts 50 ms apart would take over 50 s.
		client, ft := f.faulty(t, quickRetries(1000, 50*time.Millisecond))
		l := f.lock(t, client, uuid.NewString(), "me", withTimeout)
		ft.Add(faulthttp.Rule{Fault: faulthttp.InternalServerError()})
		timed(t, "Get", func() error { _, err := l.Get(context.Background()); return err })
		if n := ft.Count(opGetItem); n < 2 {
			t.Errorf("Get made %d attempts, want retries within the timeout", n)
		}
		timed(t, "Update", func() error {
			_, err := l.Update(context.Background(), resourcelock.Precondition{RVN: "x", HolderIdentity: "me"}, newRec(time.Second, ""))
			return err
		})
	})

	t.Run("caller context shorter than the timeout", func(t *testing.T) {
		t.Parallel()
		client, ft := f.faulty(t)
		l := f.lock(t, client, uuid.NewString(), "me", func(c *leaseConfig) { c.RequestTimeout = time.Minute })
		ft.Add(faulthttp.Rule{Fault: faulthttp.Delay(delay)})
		timed(t, "Get", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, err := l.Get(ctx)
			return err
		})
	})
}

// A write whose response is lost may have landed. When the SDK retries it,
// the retry fails its condition against our own write: ErrConflict although
// the record carries our RVN. Callers must re-read.
func TestDynamoDBAmbiguousWrites(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	t.Run("retried Create reports a conflict", func(t *testing.T) {
		client, ft := f.faulty(t)
		ft.Add(faulthttp.Rule{Op: opUpdateItem, Times: 1, Fault: faulthttp.DropResponse(faulthttp.DropRetryable)})
		name := uuid.NewString()
		in := newRec(time.Second, "")
		_, err := f.lock(t, client, name, "me").Create(testCtx(t), in)
		if !errors.Is(err, resourcelock.ErrConflict) {
			t.Fatalf("Create with a dropped, retried response: %v, want ErrConflict", err)
		}
		if n := ft.Count(opUpdateItem); n != 2 {
			t.Errorf("%d UpdateItem requests, want 2 (the SDK's retry)", n)
		}
		got := mustGet(t, f.lock(t, nil, name, "observer"))
		if got.RVN != in.RVN || got.HolderIdentity != "me" || got.Acquisitions != 1 {
			t.Fatalf("record after the ambiguous Create = %+v, want our RVN %s, holder me, 1 transition", got, in.RVN)
		}
	})

	t.Run("retried renewal reports a conflict", func(t *testing.T) {
		client, ft := f.faulty(t)
		name := uuid.NewString()
		l := f.lock(t, client, name, "me")
		first, err := l.Create(testCtx(t), newRec(time.Second, ""))
		if err != nil {
			t.Fatal(err)
		}
		ft.Add(faulthttp.Rule{Op: opUpdateItem, Times: 1, Fault: faulthttp.DropResponse(faulthttp.DropRetryable)})
		in := newRec(time.Second, "")
		_, err = l.Update(testCtx(t), resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "me"}, in)
		if !errors.Is(err, resourcelock.ErrConflict) {
			t.Fatalf("renewal with a dropped, retried response: %v, want ErrConflict", err)
		}
		if got := mustGet(t, l); got.RVN != in.RVN {
			t.Fatalf("record after the ambiguous renewal carries RVN %q, want ours %q", got.RVN, in.RVN)
		}
	})

	t.Run("terminal drop is not a conflict", func(t *testing.T) {
		client, ft := f.faulty(t)
		ft.Add(faulthttp.Rule{Op: opUpdateItem, Times: 1, Fault: faulthttp.DropResponse(faulthttp.DropTerminal)})
		name := uuid.NewString()
		in := newRec(time.Second, "")
		_, err := f.lock(t, client, name, "me").Create(testCtx(t), in)
		if err == nil || errors.Is(err, resourcelock.ErrConflict) {
			t.Fatalf("Create with a dropped response: %v, want a non-conflict error", err)
		}
		var ie *faulthttp.InjectedError
		if !errors.As(err, &ie) || !ie.Landed {
			t.Errorf("Create error %v does not carry the landed *faulthttp.InjectedError", err)
		}
		if n := ft.Count(opUpdateItem); n != 1 {
			t.Errorf("%d UpdateItem requests, want 1", n)
		}
		if got := mustGet(t, f.lock(t, nil, name, "observer")); got.RVN != in.RVN {
			t.Fatalf("record after the failed Create carries RVN %q, want ours %q", got.RVN, in.RVN)
		}
	})
}

func TestDynamoDBThrottling(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	client, ft := f.faulty(t, noRetries)
	name := uuid.NewString()
	l := f.lock(t, client, name, "me")
	ft.Reset() // the table check

	h := ft.Add(faulthttp.Rule{Op: opUpdateItem, Fault: faulthttp.Throttling()})
	_, err := l.Create(testCtx(t), newRec(time.Second, ""))
	var te *types.ThrottlingException
	if errors.Is(err, resourcelock.ErrConflict) || !errors.As(err, &te) {
		t.Fatalf("throttled Create: %v (%T), want a non-conflict *types.ThrottlingException", err, err)
	}
	h.Remove()
	wantCounts(t, ft, "throttled Create without retries", map[string]int{opUpdateItem: 1})

	h = ft.Add(faulthttp.Rule{Op: opGetItem, Fault: faulthttp.ThroughputExceeded()})
	_, err = l.Get(testCtx(t))
	var pte *types.ProvisionedThroughputExceededException
	if errors.Is(err, resourcelock.ErrNotFound) || !errors.As(err, &pte) {
		t.Fatalf("throttled Get: %v (%T), want a non-not-found *types.ProvisionedThroughputExceededException", err, err)
	}
	h.Remove()

	if _, err := l.Get(testCtx(t)); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("a throttled Create stored a record: %v", err)
	}
	first, err := l.Create(testCtx(t), newRec(time.Second, ""))
	if err != nil {
		t.Fatal(err)
	}
	ft.Add(faulthttp.Rule{Op: opUpdateItem, Fault: faulthttp.Throttling()})
	_, err = l.Update(testCtx(t), resourcelock.Precondition{RVN: first.RVN, HolderIdentity: "me"}, newRec(time.Second, ""))
	if errors.Is(err, resourcelock.ErrConflict) || !errors.As(err, &te) {
		t.Fatalf("throttled renewal: %v, want a non-conflict *types.ThrottlingException", err)
	}
	ft.Clear()
	wantRecord(t, "record after a throttled renewal", mustGet(t, l), first.Record)
}
