package dynamodbstore_test

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
	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/resourcelock"
)

// tableName returns a unique table name that is deleted when t ends.
func tableName(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	name := "dynalease-test-" + uuid.NewString()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var rnf *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &rnf) {
			t.Errorf("deleting table %s: %v", name, err)
		}
	})
	return name
}

func describe(t *testing.T, c *dynamodb.Client, table string) *types.TableDescription {
	t.Helper()
	out, err := c.DescribeTable(testCtx(t), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTable %s: %v", table, err)
	}
	return out.Table
}

// wantKeys checks the key schema of desc: partition key pk and sort key sk
// (none when empty), both of type S.
func wantKeys(t *testing.T, desc *types.TableDescription, pk, sk string) {
	t.Helper()
	got := map[string]types.KeyType{}
	for _, k := range desc.KeySchema {
		got[aws.ToString(k.AttributeName)] = k.KeyType
	}
	want := map[string]types.KeyType{pk: types.KeyTypeHash}
	if sk != "" {
		want[sk] = types.KeyTypeRange
	}
	if len(got) != len(want) {
		t.Fatalf("key schema %v, want %v", got, want)
	}
	for a, kt := range want {
		if got[a] != kt {
			t.Fatalf("key schema %v, want %v", got, want)
		}
	}
	for _, a := range desc.AttributeDefinitions {
		if a.AttributeType != types.ScalarAttributeTypeS {
			t.Errorf("key attribute %s has type %s, want S", aws.ToString(a.AttributeName), a.AttributeType)
		}
	}
}

func billingMode(desc *types.TableDescription) types.BillingMode {
	if desc.BillingModeSummary == nil {
		return ""
	}
	return desc.BillingModeSummary.BillingMode
}

func TestCreateTable(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	fast := dynamodbstore.TableOptions{PollInterval: 10 * time.Millisecond}

	t.Run("on-demand", func(t *testing.T) {
		t.Parallel()
		table := tableName(t, c)
		if err := dynamodbstore.CreateTable(testCtx(t), c, table, fast); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		desc := describe(t, c, table)
		if desc.TableStatus != types.TableStatusActive {
			t.Errorf("status %s after CreateTable, want ACTIVE", desc.TableStatus)
		}
		wantKeys(t, desc, dynamodbstore.DefaultPartitionKeyAttribute, "")
		if m := billingMode(desc); m != types.BillingModePayPerRequest {
			t.Errorf("billing mode %q, want %s", m, types.BillingModePayPerRequest)
		}

		if err := dynamodbstore.CreateTable(testCtx(t), c, table, fast); err != nil {
			t.Fatalf("CreateTable on the existing table: %v", err)
		}
		for what, opts := range map[string]dynamodbstore.TableOptions{
			"with a sort key":            {SortKeyAttribute: "sk"},
			"with another partition key": {PartitionKeyAttribute: "lockName"},
		} {
			err := dynamodbstore.CreateTable(testCtx(t), c, table, opts)
			if !errors.Is(err, resourcelock.ErrPermanent) || !strings.Contains(err.Error(), table) {
				t.Errorf("CreateTable %s on the existing table: %v, want a permanent mismatch naming the table", what, err)
			}
		}

		// The table holds locks.
		l, err := newLease(leaseConfig{Client: c, Table: table, Name: "lock", Identity: "me"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Create(testCtx(t), newRec(time.Second, "")); err != nil {
			t.Fatalf("Create on the new table: %v", err)
		}
	})

	t.Run("sort key", func(t *testing.T) {
		t.Parallel()
		table := tableName(t, c)
		opts := dynamodbstore.TableOptions{PartitionKeyAttribute: "lockGroup", SortKeyAttribute: "lockName", PollInterval: 10 * time.Millisecond}
		if err := dynamodbstore.CreateTable(testCtx(t), c, table, opts); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		wantKeys(t, describe(t, c, table), "lockGroup", "lockName")
		if err := dynamodbstore.CreateTable(testCtx(t), c, table, opts); err != nil {
			t.Fatalf("CreateTable again: %v", err)
		}
		err := dynamodbstore.CreateTable(testCtx(t), c, table, dynamodbstore.TableOptions{PartitionKeyAttribute: "lockGroup"})
		if !errors.Is(err, resourcelock.ErrPermanent) {
			t.Errorf("CreateTable without the sort key on the existing table: %v, want a permanent mismatch", err)
		}
		err = dynamodbstore.CreateTable(testCtx(t), c, table, dynamodbstore.TableOptions{PartitionKeyAttribute: "lockGroup", SortKeyAttribute: "other"})
		if !errors.Is(err, resourcelock.ErrPermanent) {
			t.Errorf("CreateTable with another sort key on the existing table: %v, want a permanent mismatch", err)
		}
	})

	t.Run("provisioned", func(t *testing.T) {
		t.Parallel()
		table := tableName(t, c)
		opts := fast
		opts.Provisioned = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(3), WriteCapacityUnits: aws.Int64(4)}
		if err := dynamodbstore.CreateTable(testCtx(t), c, table, opts); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		desc := describe(t, c, table)
		wantKeys(t, desc, dynamodbstore.DefaultPartitionKeyAttribute, "")
		pt := desc.ProvisionedThroughput
		if pt == nil || aws.ToInt64(pt.ReadCapacityUnits) != 3 || aws.ToInt64(pt.WriteCapacityUnits) != 4 {
			t.Errorf("provisioned throughput %+v, want 3 read and 4 write units", pt)
		}
		// A table that was always provisioned may have no billing mode
		// summary (DynamoDB Local sends none); the throughput above shows it.
		if m := billingMode(desc); m != "" && m != types.BillingModeProvisioned {
			t.Errorf("billing mode %q, want %s", m, types.BillingModeProvisioned)
		}
	})

	t.Run("existing table with a number key", func(t *testing.T) {
		t.Parallel()
		table := ddbtest.NewTable(t, c, ddbtest.TableSpec{PartitionKeyType: types.ScalarAttributeTypeN})
		err := dynamodbstore.CreateTable(testCtx(t), c, table, fast)
		if !errors.Is(err, resourcelock.ErrPermanent) {
			t.Errorf("CreateTable on a table keyed by a number: %v, want a permanent mismatch", err)
		}
	})
}

// fakeTables is a TableAPI that serves one table whose DescribeTable
// answers follow a script.
type fakeTables struct {
	mu        sync.Mutex
	describes []describeAnswer // one per DescribeTable; the last repeats
	createErr error
	creates   []*dynamodb.CreateTableInput
	nDescribe int

	// ttls answers DescribeTimeToLive, one per call; the last repeats, and
	// none means TTL is disabled.
	ttls           []ttlAnswer
	updateTTLErr   error
	updateTTLs     []*dynamodb.UpdateTimeToLiveInput
	nDescribeTTL   int
	activeAtTTL    bool // whether ACTIVE had been described at the first DescribeTimeToLive
	describedReady bool // whether some DescribeTable answered ACTIVE
}

// ttlAnswer is one DescribeTimeToLive answer: TTL in status on attr, or
// err.
type ttlAnswer struct {
	status types.TimeToLiveStatus
	attr   string
	err    error
}

type describeAnswer struct {
	status types.TableStatus // empty: ResourceNotFoundException
	keys   []types.KeySchemaElement
	err    error
}

var defaultKeys = []types.KeySchemaElement{{AttributeName: aws.String("key"), KeyType: types.KeyTypeHash}}

func (f *fakeTables) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates = append(f.creates, in)
	if f.createErr != nil {
		return nil, f.createErr
	}
	return &dynamodb.CreateTableOutput{}, nil
}

func (f *fakeTables) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.describes) == 0 {
		return nil, errors.New("fakeTables: no answer scripted")
	}
	a := f.describes[min(f.nDescribe, len(f.describes)-1)]
	f.nDescribe++
	switch {
	case a.err != nil:
		return nil, a.err
	case a.status == "":
		return nil, &types.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	}
	f.describedReady = f.describedReady || a.status == types.TableStatusActive
	keys := a.keys
	if keys == nil {
		keys = defaultKeys
	}
	var defs []types.AttributeDefinition
	for _, k := range keys {
		defs = append(defs, types.AttributeDefinition{AttributeName: k.AttributeName, AttributeType: types.ScalarAttributeTypeS})
	}
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
		TableName: in.TableName, TableStatus: a.status, KeySchema: keys, AttributeDefinitions: defs,
	}}, nil
}

func (f *fakeTables) DescribeTimeToLive(_ context.Context, in *dynamodb.DescribeTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nDescribeTTL == 0 {
		f.activeAtTTL = f.describedReady
	}
	f.nDescribeTTL++
	a := ttlAnswer{status: types.TimeToLiveStatusDisabled}
	if len(f.ttls) > 0 {
		a = f.ttls[min(f.nDescribeTTL-1, len(f.ttls)-1)]
	}
	if a.err != nil {
		return nil, a.err
	}
	d := &types.TimeToLiveDescription{TimeToLiveStatus: a.status}
	if a.attr != "" {
		d.AttributeName = aws.String(a.attr)
	}
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: d}, nil
}

func (f *fakeTables) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updateTTLs = append(f.updateTTLs, in)
	if f.updateTTLErr != nil {
		return nil, f.updateTTLErr
	}
	return &dynamodb.UpdateTimeToLiveOutput{TimeToLiveSpecification: in.TimeToLiveSpecification}, nil
}

// ttlCounts returns the number of DescribeTimeToLive and UpdateTimeToLive
// requests.
func (f *fakeTables) ttlCounts() (describes, updates int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nDescribeTTL, len(f.updateTTLs)
}

func (f *fakeTables) counts() (creates, describes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.creates), f.nDescribe
}

// Runs without DynamoDB.
func TestCreateTableInvalidOptions(t *testing.T) {
	fake := &fakeTables{}
	for what, tc := range map[string]struct {
		table string
		opts  dynamodbstore.TableOptions
	}{
		"empty table name":         {"", dynamodbstore.TableOptions{}},
		"reserved partition key":   {"t", dynamodbstore.TableOptions{PartitionKeyAttribute: "ownerName"}},
		"reserved sort key":        {"t", dynamodbstore.TableOptions{SortKeyAttribute: "leaseDuration"}},
		"sort key = partition key": {"t", dynamodbstore.TableOptions{SortKeyAttribute: "key"}},
		"zero read capacity":       {"t", dynamodbstore.TableOptions{Provisioned: &types.ProvisionedThroughput{WriteCapacityUnits: aws.Int64(1)}}},
		"negative write capacity": {"t", dynamodbstore.TableOptions{Provisioned: &types.ProvisionedThroughput{
			ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(-1)}}},
	} {
		err := dynamodbstore.CreateTable(context.Background(), fake, tc.table, tc.opts)
		if !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("CreateTable with %s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
	if c, d := fake.counts(); c+d != 0 {
		t.Fatalf("invalid options sent %d CreateTable and %d DescribeTable requests, want none", c, d)
	}
}

// Runs without DynamoDB: the wait for ACTIVE, on a scripted table.
func TestCreateTableWaitsForActive(t *testing.T) {
	opts := dynamodbstore.TableOptions{PollInterval: time.Millisecond}
	ctx := testCtx(t)

	t.Run("new table", func(t *testing.T) {
		fake := &fakeTables{describes: []describeAnswer{{}, {status: types.TableStatusCreating}, {status: types.TableStatusCreating}, {status: types.TableStatusActive}}}
		if err := dynamodbstore.CreateTable(ctx, fake, "t", opts); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		if c, d := fake.counts(); c != 1 || d != 4 {
			t.Fatalf("%d CreateTable and %d DescribeTable requests, want 1 and 4", c, d)
		}
		in := fake.creates[0]
		if aws.ToString(in.TableName) != "t" || in.BillingMode != types.BillingModePayPerRequest || in.ProvisionedThroughput != nil {
			t.Errorf("CreateTable input %+v, want on-demand table t", in)
		}
	})

	t.Run("existing active table", func(t *testing.T) {
		fake := &fakeTables{describes: []describeAnswer{{status: types.TableStatusActive}}}
		if err := dynamodbstore.CreateTable(ctx, fake, "t", opts); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		if c, d := fake.counts(); c != 0 || d != 1 {
			t.Fatalf("%d CreateTable and %d DescribeTable requests, want 0 and 1", c, d)
		}
	})

	t.Run("created meanwhile by someone else", func(t *testing.T) {
		fake := &fakeTables{
			describes: []describeAnswer{{}, {status: types.TableStatusCreating}, {status: types.TableStatusActive}},
			createErr: &types.ResourceInUseException{Message: aws.String("Table already exists")},
		}
		if err := dynamodbstore.CreateTable(ctx, fake, "t", opts); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
	})

	t.Run("created meanwhile with another key", func(t *testing.T) {
		fake := &fakeTables{
			describes: []describeAnswer{{}, {status: types.TableStatusCreating, keys: []types.KeySchemaElement{
				{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}}},
			createErr: &types.ResourceInUseException{Message: aws.String("Table already exists")},
		}
		if err := dynamodbstore.CreateTable(ctx, fake, "t", opts); !errors.Is(err, resourcelock.ErrPermanent) {
			t.Fatalf("CreateTable: %v, want a permanent mismatch", err)
		}
	})

	t.Run("create fails", func(t *testing.T) {
		boom := errors.New("boom")
		fake := &fakeTables{describes: []describeAnswer{{}}, createErr: boom}
		if err := dynamodbstore.CreateTable(ctx, fake, "t", opts); !errors.Is(err, boom) {
			t.Fatalf("CreateTable: %v, want the CreateTable error", err)
		}
	})

	t.Run("describe fails", func(t *testing.T) {
		boom := errors.New("boom")
		fake := &fakeTables{describes: []describeAnswer{{status: types.TableStatusCreating}, {err: boom}}}
		if err := dynamodbstore.CreateTable(ctx, fake, "t", opts); !errors.Is(err, boom) {
			t.Fatalf("CreateTable: %v, want the DescribeTable error", err)
		}
	})

	t.Run("never active", func(t *testing.T) {
		fake := &fakeTables{describes: []describeAnswer{{status: types.TableStatusCreating}}}
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err := dynamodbstore.CreateTable(short, fake, "t", opts)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"t"`) {
			t.Fatalf("CreateTable on a table that stays CREATING: %v, want context.DeadlineExceeded naming the table", err)
		}
		if _, d := fake.counts(); d < 2 {
			t.Errorf("%d DescribeTable requests, want it to poll", d)
		}
	})
}
