package dynamodbstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr/funcr"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

// describeClient is a client whose DescribeTable answers from describe (by
// table) and whose item requests answer "no item": enough to watch the
// table check.
type describeClient struct {
	mu       sync.Mutex
	calls    map[string]int
	describe func(table string) (*dynamodb.DescribeTableOutput, error)
}

func (c *describeClient) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[aws.ToString(in.TableName)]++
	c.mu.Unlock()
	return c.describe(aws.ToString(in.TableName))
}

func (c *describeClient) count(table string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[table]
}

func (*describeClient) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}
func (*describeClient) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errors.New("no writes here")
}
func (*describeClient) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errors.New("no writes here")
}
func (*describeClient) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{}, nil
}
func (*describeClient) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}
func (*describeClient) TransactGetItems(context.Context, *dynamodb.TransactGetItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	return nil, errors.New("no transactions here")
}
func (*describeClient) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errors.New("no transactions here")
}

func described(table string, edit func(*types.TableDescription)) *dynamodb.DescribeTableOutput {
	d := &types.TableDescription{TableName: aws.String(table),
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("key"), KeyType: types.KeyTypeHash}}}
	if edit != nil {
		edit(d)
	}
	return &dynamodb.DescribeTableOutput{Table: d}
}

func newChecked(t *testing.T, c *describeClient, fenceTable string) *Store {
	t.Helper()
	s, err := New(Config{Client: c, Table: "locks", FenceTable: fenceTable, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var key = resourcelock.Key{Partition: "k"}

// A legacy global table (2017.11.29), whose replicas DescribeTable does
// not list, is refused by its version.
func TestALegacyGlobalTableIsRefused(t *testing.T) {
	c := &describeClient{describe: func(table string) (*dynamodb.DescribeTableOutput, error) {
		return described(table, func(d *types.TableDescription) { d.GlobalTableVersion = aws.String("2017.11.29") }), nil
	}}
	if _, err := rs(newChecked(t, c, "")).Get(context.Background(), key); !errors.Is(err, resourcelock.ErrPermanent) {
		t.Fatalf("Get on a legacy global table: %v, want resourcelock.ErrPermanent", err)
	}
}

// A DescribeTable that fails for a reason waiting may fix fails the
// request, and the next request checks again; once made, the check is not
// made again.
func TestATransientTableCheckFailureIsTriedAgain(t *testing.T) {
	fail := true
	c := &describeClient{describe: func(table string) (*dynamodb.DescribeTableOutput, error) {
		if fail {
			fail = false
			return nil, errors.New("connection reset")
		}
		return described(table, nil), nil
	}}
	s := newChecked(t, c, "")
	if _, err := rs(s).Get(context.Background(), key); err == nil || resourcelock.Permanent(err) {
		t.Fatalf("Get while DescribeTable fails: %v, want a transient error", err)
	}
	for range 3 {
		if _, err := rs(s).Get(context.Background(), key); !errors.Is(err, resourcelock.ErrNotFound) {
			t.Fatalf("Get after the check: %v, want ErrNotFound", err)
		}
	}
	if n := c.count("locks"); n != 2 {
		t.Fatalf("%d DescribeTable requests, want 2 (one failed, one kept)", n)
	}
}

// While one caller's check is under way, another caller waits for it on
// its own context, and returns when that context ends.
func TestACallerWaitingForTheTableCheckHonoursItsContext(t *testing.T) {
	release := make(chan struct{})
	c := &describeClient{describe: func(table string) (*dynamodb.DescribeTableOutput, error) {
		<-release
		return described(table, nil), nil
	}}
	s := newChecked(t, c, "")
	first := make(chan error, 1)
	go func() { _, err := rs(s).Get(context.Background(), key); first <- err }()
	for c.count("locks") == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { _, err := rs(s).Get(ctx, key); second <- err }()
	cancel()
	select {
	case err := <-second:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the waiting Get: %v, want its context's error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting Get did not return when its context ended")
	}
	select {
	case err := <-first:
		t.Fatalf("the checking Get returned (%v) before its DescribeTable did", err)
	default:
	}
	close(release)
	if err := <-first; !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("the checking Get: %v, want ErrNotFound", err)
	}
}

// The fence table is checked at the first request to it: reads work while
// it is missing, and a fence table that is an MRSC global table refuses a
// set's fence before sending, though the lock table is not global.
func TestTheFenceTableIsCheckedWhenFirstUsed(t *testing.T) {
	fence := "missing"
	c := &describeClient{describe: func(table string) (*dynamodb.DescribeTableOutput, error) {
		if table == "fences" && fence == "missing" {
			return nil, &types.ResourceNotFoundException{Message: aws.String("no table")}
		}
		return described(table, func(d *types.TableDescription) {
			if table == "fences" {
				d.Replicas = []types.ReplicaDescription{{RegionName: aws.String("us-east-2")}}
				d.MultiRegionConsistency = types.MultiRegionConsistencyStrong
			}
		}), nil
	}}
	s := newChecked(t, c, "fences")
	if _, err := rs(s).Get(context.Background(), key); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get with the fence table missing: %v, want ErrNotFound", err)
	}
	if _, err := rs(s).Fence(context.Background(), key, "me", "a1"); !errors.Is(err, resourcelock.ErrPermanent) {
		t.Fatalf("Fence with the fence table missing: %v, want resourcelock.ErrPermanent", err)
	}
	fence = "mrsc"
	_, err := rs(s).FenceMany(context.Background(), []resourcelock.Key{key, {Partition: "k2"}}, "me", "a1")
	if !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("FenceMany with an MRSC fence table: %v, want dynalease.ErrInvalid", err)
	}
}

// storeOnly is a client written against StoreAPI alone, as an
// instrumenting wrapper of the SDK's client may be: it has no
// DescribeTable, although the client it wraps describes an MREC global
// table.
type storeOnly struct{ StoreAPI }

// A client that cannot describe the table cannot have it checked for an
// eventually consistent global table, so it is refused before any request,
// with an error that names the fix, unless SkipTableCheck says in so many
// words that the check is skipped. The check fails closed: an MREC table
// behind such a client is never used as a lock table by accident.
func TestAClientWithoutDescribeTableIsRefusedUnlessTheCheckIsSkipped(t *testing.T) {
	mrec := &describeClient{describe: func(table string) (*dynamodb.DescribeTableOutput, error) {
		return described(table, func(d *types.TableDescription) {
			d.Replicas = []types.ReplicaDescription{{RegionName: aws.String("eu-west-1")}}
		}), nil
	}}
	_, err := New(Config{Client: storeOnly{mrec}, Table: "locks"})
	var ce *dynalease.InvalidError
	if !errors.As(err, &ce) || ce.Field != "Client" || !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("New with a client without DescribeTable: %v, want an InvalidError naming Client", err)
	}
	for _, fix := range []string{"DescribeTable", "SkipTableCheck"} {
		if !strings.Contains(err.Error(), fix) {
			t.Errorf("the refusal %q does not name %s", err, fix)
		}
	}
	if got := mrec.count("locks"); got != 0 {
		t.Fatalf("%d DescribeTable requests, want none", got)
	}

	var logged strings.Builder
	log := funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{})
	s, err := New(Config{Client: storeOnly{mrec}, Table: "locks", SkipTableCheck: true, Logger: log})
	if err != nil {
		t.Fatalf("New with SkipTableCheck: %v", err)
	}
	if !strings.Contains(logged.String(), "SkipTableCheck") {
		t.Errorf("New with SkipTableCheck logged %q, want a line naming it", logged.String())
	}
	if _, err := rs(s).Get(context.Background(), key); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get with the check skipped: %v, want ErrNotFound (no check, no refusal)", err)
	}
	// The check is skipped even for a client that could describe the
	// table: the setting says what it says.
	s, err = New(Config{Client: mrec, Table: "locks", SkipTableCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs(s).Get(context.Background(), key); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get with the check skipped: %v, want ErrNotFound", err)
	}
	if got := mrec.count("locks"); got != 0 {
		t.Fatalf("%d DescribeTable requests with the check skipped, want none", got)
	}
}
