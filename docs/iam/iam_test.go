// Package iam_test checks that each least-privilege policy in this folder
// names exactly the DynamoDB actions its code path sends: every path runs
// against DynamoDB Local with a middleware that records the action and
// table of each request, and the set is compared with the policy file.
package iam_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
)

// recorder records "dynamodb:Action on table" for every request.
type recorder struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (r *recorder) add(action, table string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen["dynamodb:"+action+" "+table] = true
}

func (r *recorder) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("IAMRecorder",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				r.record(awsmiddleware.GetOperationName(ctx), in.Parameters)
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

// keyRecorder is a client option's API option that calls fn with every
// request's operation and input.
func keyRecorder(fn func(op string, params any)) func(*middleware.Stack) error {
	var mu sync.Mutex
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("KeyRecorder",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				mu.Lock()
				fn(awsmiddleware.GetOperationName(ctx), in.Parameters)
				mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
}

// record notes the IAM actions of one request: a transaction needs the
// action of each of its items, on that item's table.
func (r *recorder) record(op string, params any) {
	if tw, ok := params.(*dynamodb.TransactWriteItemsInput); ok {
		for _, it := range tw.TransactItems {
			switch {
			case it.ConditionCheck != nil:
				r.add("ConditionCheckItem", aws.ToString(it.ConditionCheck.TableName))
			case it.Put != nil:
				r.add("PutItem", aws.ToString(it.Put.TableName))
			case it.Update != nil:
				r.add("UpdateItem", aws.ToString(it.Update.TableName))
			case it.Delete != nil:
				r.add("DeleteItem", aws.ToString(it.Delete.TableName))
			}
		}
		return
	}
	if tg, ok := params.(*dynamodb.TransactGetItemsInput); ok {
		for _, it := range tg.TransactItems {
			r.add("GetItem", aws.ToString(it.Get.TableName))
		}
		return
	}
	table := ""
	if v, ok := params.(interface{ GetTableName() *string }); ok {
		table = aws.ToString(v.GetTableName())
	} else {
		table = tableOf(params)
	}
	r.add(op, table)
}

// tableOf reads the TableName field of an input without that accessor.
func tableOf(params any) string {
	switch p := params.(type) {
	case *dynamodb.GetItemInput:
		return aws.ToString(p.TableName)
	case *dynamodb.UpdateItemInput:
		return aws.ToString(p.TableName)
	case *dynamodb.DeleteItemInput:
		return aws.ToString(p.TableName)
	case *dynamodb.PutItemInput:
		return aws.ToString(p.TableName)
	case *dynamodb.ScanInput:
		return aws.ToString(p.TableName)
	case *dynamodb.QueryInput:
		return aws.ToString(p.TableName)
	case *dynamodb.CreateTableInput:
		return aws.ToString(p.TableName)
	case *dynamodb.DescribeTableInput:
		return aws.ToString(p.TableName)
	case *dynamodb.DescribeTimeToLiveInput:
		return aws.ToString(p.TableName)
	case *dynamodb.UpdateTimeToLiveInput:
		return aws.ToString(p.TableName)
	}
	return fmt.Sprintf("%T", params)
}

// sent returns what the path sent, with table names replaced by the
// policy's parameters.
func (r *recorder) sent(params map[string]string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.seen {
		action, table, _ := strings.Cut(k, " ")
		if p, ok := params[table]; ok {
			table = p
		}
		out = append(out, action+" "+table)
	}
	sort.Strings(out)
	return out
}

var tableParam = regexp.MustCompile(`:table/\$\{(\w+)\}$`)

// statement is one statement of a policy file.
type statement struct {
	Effect    string
	Action    []string
	Resource  json.RawMessage
	Condition map[string]map[string][]string
}

// readPolicy returns the statements of a policy file.
func readPolicy(t *testing.T, file string) []statement {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Statement []statement }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return doc.Statement
}

// allowed returns the "action Table" pairs a policy file allows.
func allowed(t *testing.T, file string) []string {
	t.Helper()
	var out []string
	for _, st := range readPolicy(t, file) {
		if st.Effect != "Allow" {
			t.Fatalf("%s: a statement with effect %q", file, st.Effect)
		}
		var resources []string
		if err := json.Unmarshal(st.Resource, &resources); err != nil {
			var one string
			if err := json.Unmarshal(st.Resource, &one); err != nil {
				t.Fatalf("%s: Resource: %v", file, err)
			}
			resources = []string{one}
		}
		for _, res := range resources {
			m := tableParam.FindStringSubmatch(res)
			if m == nil {
				t.Fatalf("%s: resource %q is not a parameterised table ARN", file, res)
			}
			for _, a := range st.Action {
				out = append(out, a+" "+m[1])
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func check(t *testing.T, file string, r *recorder, params map[string]string) {
	t.Helper()
	got, want := r.sent(params), allowed(t, file)
	if !slices.Equal(got, want) {
		t.Errorf("%s allows\n  %v\nbut the path sends\n  %v", file, want, got)
	}
}

func client(t *testing.T, r *recorder) *dynamodb.Client {
	return ddbtest.Client(t, r.option)
}

func TestDynamoDBElectionPolicy(t *testing.T) {
	t.Parallel()
	r := &recorder{seen: map[string]bool{}}
	c := client(t, r)
	table := ddbtest.NewTable(t, ddbtest.Client(t), ddbtest.TableSpec{})
	started := make(chan struct{}, 1)
	newElector := func(id string) *election.Elector {
		store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table})
		if err != nil {
			t.Fatal(err)
		}
		e, err := election.New(election.Config{
			Store: store, Name: "leader", Identity: id, LeaseDuration: 20 * time.Second, RenewDeadline: 15 * time.Second, RetryPeriod: 50 * time.Millisecond,
			ReleaseOnCancel: true,
			Callbacks: election.Callbacks{
				OnStartedLeading: func(ctx context.Context) { started <- struct{}{}; <-ctx.Done() },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- newElector("a").Run(ctx) }()
	<-started
	go func() { done <- newElector("b").Run(ctx) }() // a candidate polls
	time.Sleep(200 * time.Millisecond)               // a few renewals and polls
	cancel()
	<-done
	<-done
	check(t, "election.json", r, map[string]string{table: "LockTable"})
}

func TestDynamoDBLockClientPolicy(t *testing.T) {
	t.Parallel()
	r := &recorder{seen: map[string]bool{}}
	table := ddbtest.NewTable(t, ddbtest.Client(t), ddbtest.TableSpec{SortKey: "sortKey"})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client(t, r), Table: table, SortKeyAttribute: "sortKey"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := lock.New(lock.Config{Store: store, ManualHeartbeats: true, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l, err := c.Acquire(ctx, "k", lock.WithSortKeyValue("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err = c.Acquire(ctx, "k", lock.WithSortKeyValue("b"), lock.WithDeleteOnRelease())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A set: one transaction to take, renew and delete its rows; and, with
	// a key held by another, one to read them.
	l, err = c.AcquireSet(ctx, []string{"s1", "s2"}, lock.WithSortKeyValue("a"), lock.WithDeleteOnRelease())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := lock.New(lock.Config{Store: store, ManualHeartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.Acquire(ctx, "s3", lock.WithSortKeyValue("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquireSet(ctx, []string{"s3", "s4"}, lock.WithSortKeyValue("a")); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("TryAcquireSet with a key held by another: %v, want ErrLocked", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "k", lock.WithSortKeyValue("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	check(t, "lock-client.json", r, map[string]string{table: "LockTable"})
}

func TestDynamoDBFencingAndGuardedWritesPolicy(t *testing.T) {
	t.Parallel()
	r := &recorder{seen: map[string]bool{}}
	raw := ddbtest.Client(t)
	table := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	fences := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	app := ddbtest.NewTable(t, raw, ddbtest.TableSpec{PartitionKey: "id"})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client(t, r), Table: table, FenceTable: fences})
	if err != nil {
		t.Fatal(err)
	}
	c, err := lock.New(lock.Config{Store: store, Fencing: true, ManualHeartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// Waiting for a lock another owner holds polls it (GetItem).
	other, err := lock.New(lock.Config{Store: store, Fencing: true, ManualHeartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a failed create, then a poll of the RVN seen
		if _, err := c.TryAcquire(ctx, "k"); err == nil {
			t.Fatal("TryAcquire of a held lock succeeded")
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "order-1"}}
	if err := l.Guard(ctx, store.Writes(
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String(app), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "order-1"}, "n": &types.AttributeValueMemberN{Value: "1"}}}},
	)); err != nil {
		t.Fatal(err)
	}
	if err := l.Guard(ctx, store.Writes(types.TransactWriteItem{Update: &types.Update{TableName: aws.String(app), Key: key,
		UpdateExpression: aws.String("SET n = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "2"}}}})); err != nil {
		t.Fatal(err)
	}
	if err := l.Guard(ctx, store.Writes(types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(app), Key: key}})); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// A fenced set: its generations are read from the fence table and
	// written with the rows in one transaction; its guard checks each row.
	set, err := c.AcquireSet(ctx, []string{"s1", "s2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Guard(ctx, store.Writes(types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(app), Key: key}})); err != nil {
		t.Fatal(err)
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	check(t, "fencing-guarded-writes.json", r, map[string]string{table: "LockTable", fences: "FenceTable", app: "AppTable"})
}

func TestDynamoDBTTLPolicy(t *testing.T) {
	t.Parallel()
	r := &recorder{seen: map[string]bool{}}
	table := ddbtest.NewTable(t, ddbtest.Client(t), ddbtest.TableSpec{})
	if err := dynamodbstore.CreateTable(t.Context(), client(t, r), table, dynamodbstore.TableOptions{TTLAttribute: dynamodbstore.DefaultTTLAttribute}); err != nil {
		t.Fatal(err)
	}
	check(t, "ttl.json", r, map[string]string{table: "LockTable"})
}

func TestDynamoDBCreateTablesPolicy(t *testing.T) {
	t.Parallel()
	r := &recorder{seen: map[string]bool{}}
	c := client(t, r)
	suffix := fmt.Sprint(time.Now().UnixNano())
	locks, fences := "iam-locks-"+suffix, "iam-fences-"+suffix
	for _, name := range []string{locks, fences} {
		t.Cleanup(func() { ddbtest.DeleteTable(t, ddbtest.Client(t), name) })
		if err := dynamodbstore.CreateTable(t.Context(), c, name, dynamodbstore.TableOptions{TTLAttribute: dynamodbstore.DefaultTTLAttribute}); err != nil {
			t.Fatal(err)
		}
	}
	check(t, "create-tables.json", r, map[string]string{locks: "LockTable", fences: "FenceTable"})
}
