package lock_test

// Helpers of the fencing and guarded-write tests on DynamoDB Local
// (dynamodb_fencing_test.go, dynamodb_guard_test.go and
// dynamodb_sigstop_guard_test.go). Every name starts with fg so that these
// files stand apart from the package's other tests.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
)

// Timing of the clients these tests build unless a test overrides it. With
// heartbeats off by default, every request a client sends is one the test
// asked for, so request counts are exact. These tests are not about timing:
// the lease is long enough that no stall of a loaded machine ends it while
// a test runs, and the request timeout generous enough that no request
// times out (a timeout would add a resolving read to the counts). A test
// that needs a lock to run out sets its own lease.
const (
	fgLease   = 2 * time.Minute
	fgTimeout = 20 * time.Second // ≤ (lease − margin) / 2 without heartbeats
	fgRefresh = time.Second      // waits on a held row end at its expiry, not in polls
	fgPatient = time.Minute      // bound for things that must happen
)

// fgEnv is one test's three tables: the lock table, the fence table that
// keeps fencing generations, and an application table (partition key "id")
// that guarded and fenced writes go to. raw is a plain SDK client for
// reads and writes the way another program would make them.
type fgEnv struct {
	t      *testing.T
	raw    *dynamodb.Client
	locks  string
	fences string
	data   string
	seq    *atomic.Int32 // shared by the envs of subtests
}

func newFGEnv(t *testing.T) *fgEnv {
	t.Helper()
	raw := ddbtest.Client(t)
	return &fgEnv{
		t:      t,
		raw:    raw,
		locks:  ddbtest.NewTable(t, raw, ddbtest.TableSpec{}),
		fences: ddbtest.NewTable(t, raw, ddbtest.TableSpec{}),
		data:   ddbtest.NewTable(t, raw, ddbtest.TableSpec{PartitionKey: "id"}),
		seq:    new(atomic.Int32),
	}
}

// sub returns the env for a subtest t: the same tables, with failures and
// cleanups going to t.
func (e *fgEnv) sub(t *testing.T) *fgEnv {
	c := *e
	c.t = t
	return &c
}

// fgClient is a lock client whose requests go through ft. fenceReqs counts
// the requests addressed to the fence table.
type fgClient struct {
	*lock.Client
	ft        *faulthttp.Transport
	fenceReqs *faulthttp.Handle
}

// fgQuickRetries keeps the SDK's three attempts but with a short fixed
// backoff and no retry quota.
func fgQuickRetries(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 3
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 10 * time.Millisecond, nil })
		so.RateLimiter = ratelimit.None
	})
}

// newClient returns a fencing lock client named after name, with
// heartbeats off unless opts turn them on. It is closed when the test ends.
func (e *fgEnv) newClient(name string, opts ...lock.Option) *fgClient {
	t := e.t
	t.Helper()
	ft := faulthttp.New(nil)
	c := &fgClient{ft: ft}
	// A rule with the zero Fault forwards the request unchanged; its hits
	// count the requests whose body names the fence table.
	c.fenceReqs = ft.Add(faulthttp.Rule{BodyContains: strconv.Quote(e.fences)})
	sdk := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = ft }, fgQuickRetries)
	all := []lock.Option{
		lock.WithOwnerName(fmt.Sprintf("%s-%d", name, e.seq.Add(1))),
		lock.WithFencing(e.fences),
		lock.WithLeaseDuration(fgLease),
		lock.WithHeartbeatPeriod(0),
		lock.WithRefreshPeriod(fgRefresh),
		lock.WithRequestTimeout(fgTimeout),
		// A queue's head reads every quarter period while a hand-over
		// is due, from 1.5 periods before the holders' stint on: a stint
		// of 4 periods keeps those reads after the leases the tests
		// wait out, whose request counts are exact.
		lock.WithStint(4 * fgRefresh),
	}
	lc, err := lock.NewOn(sdk, e.locks, append(all, opts...)...)
	if err != nil {
		t.Fatalf("lock.NewOn(%s): %v", name, err)
	}
	c.Client = lc
	// The table check, made now so that the tests count only their own
	// operations' requests.
	if err := lock.CheckTable(t.Context(), lc); err != nil {
		t.Fatalf("CheckTable: %v", err)
	}
	ft.Reset()
	t.Cleanup(func() {
		ft.Clear()
		ctx, cancel := context.WithTimeout(context.Background(), fgPatient)
		defer cancel()
		if err := lc.Close(ctx); err != nil {
			t.Errorf("Close of %s: %v", lc.Identity(), err)
		}
		ft.CloseIdleConnections()
	})
	return c
}

// fenceCount returns how many requests c sent to the fence table so far.
func (c *fgClient) fenceCount() int { return c.fenceReqs.Hits() }

func (c *fgClient) mustAcquire(t *testing.T, key string, opts ...lock.AcquireOption) *lock.Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), fgPatient)
	defer cancel()
	l, err := c.Acquire(ctx, key, opts...)
	if err != nil {
		t.Fatalf("Acquire(%q) by %s: %v", key, c.Identity(), err)
	}
	return l
}

// fgS and fgN build attribute values.
func fgS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func fgN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// fgStr and fgNum read attributes; "" and 0 when absent or of another
// type.
func fgStr(item map[string]types.AttributeValue, attr string) string {
	if v, ok := item[attr].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func fgNum(t *testing.T, item map[string]types.AttributeValue, attr string) int64 {
	t.Helper()
	v, ok := item[attr].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		t.Fatalf("attribute %s = %q is not an integer", attr, v.Value)
	}
	return n
}

// lockRow reads the lock row of key; nil when there is none.
func (e *fgEnv) lockRow(key string) map[string]types.AttributeValue {
	e.t.Helper()
	return e.get(e.locks, "key", key)
}

// dataItem reads the application item id; nil when there is none.
func (e *fgEnv) dataItem(id string) map[string]types.AttributeValue {
	e.t.Helper()
	return e.get(e.data, "id", id)
}

func (e *fgEnv) get(table, pk, v string) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{pk: fgS(v)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		e.t.Fatalf("raw GetItem %s/%s: %v", table, v, err)
	}
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// putRaw writes a whole item unconditionally.
func (e *fgEnv) putRaw(table string, item map[string]types.AttributeValue) {
	e.t.Helper()
	if _, err := e.raw.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		e.t.Fatalf("raw PutItem into %s: %v", table, err)
	}
}

// deleteLockRow deletes a lock row unconditionally, as DynamoDB's TTL or an
// operator would.
func (e *fgEnv) deleteLockRow(key string) {
	e.t.Helper()
	if _, err := e.raw.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(e.locks),
		Key:       map[string]types.AttributeValue{"key": fgS(key)},
	}); err != nil {
		e.t.Fatalf("raw DeleteItem: %v", err)
	}
}

// rowToken is the fencing token a lock row carries, computed from its raw
// attributes: generation in the high bits, counter in the low 32.
func fgRowToken(t *testing.T, row map[string]types.AttributeValue) int64 {
	t.Helper()
	return fgNum(t, row, "fenceGeneration")<<32 | fgNum(t, row, "leaderTransitions")
}

// fgConditionFailed reports whether err is DynamoDB's answer to a failed
// condition of a single-item write.
func fgConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// fgEnded reports whether the lock's Done channel is closed.
func fgEnded(l *lock.Lock) bool {
	select {
	case <-l.Done():
		return true
	default:
		return false
	}
}
