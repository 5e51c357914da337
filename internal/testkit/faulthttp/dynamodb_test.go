package faulthttp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
)

// newClient builds a DynamoDB client for the emulator that sends its
// requests through httpClient (the SDK default if nil).
func newClient(t *testing.T, httpClient dynamodb.HTTPClient, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return ddbtest.Client(t, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		if httpClient != nil {
			o.HTTPClient = httpClient
		}
	}}, optFns...)...)
}

// noRetries makes the client give up after the first attempt.
func noRetries(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// quickRetries replaces the SDK's backoff with a short fixed delay, keeping
// the standard retryable checks and the given number of attempts.
func quickRetries(attempts int) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) {
				return 10 * time.Millisecond, nil
			})
		})
	}
}

// env is one test's table plus a faulty client and a clean client for it.
type env struct {
	ft    *faulthttp.Transport
	table string
	clean *dynamodb.Client
	t     *testing.T
}

var tableSeq atomic.Int64

func newEnv(t *testing.T) *env {
	t.Helper()
	clean := newClient(t, nil)
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	table := fmt.Sprintf("faulthttp_%s_%d_%d", name, time.Now().UnixNano(), tableSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := clean.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("create table %s: %v", table, err)
	}
	ft := faulthttp.New(nil)
	t.Cleanup(func() {
		ft.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := clean.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			t.Errorf("delete table %s: %v", table, err)
		}
	})
	return &env{t: t, ft: ft, table: table, clean: clean}
}

// client returns a client that sends its requests through e.ft.
func (e *env) client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return newClient(e.t, e.ft, optFns...)
}

func (e *env) put(ctx context.Context, c *dynamodb.Client, pk string, conditional bool) error {
	in := &dynamodb.PutItemInput{
		TableName: aws.String(e.table),
		Item: map[string]types.AttributeValue{
			"pk":    &types.AttributeValueMemberS{Value: pk},
			"owner": &types.AttributeValueMemberS{Value: "me"},
		},
	}
	if conditional {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	}
	_, err := c.PutItem(ctx, in)
	return err
}

// exists reports, through the clean client, whether the item pk is stored.
func (e *env) exists(t *testing.T, pk string) bool {
	t.Helper()
	out, err := e.clean.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(e.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem %s: %v", pk, err)
	}
	return out.Item != nil
}

func (e *env) wantCount(t *testing.T, op string, want int) {
	t.Helper()
	if got := e.ft.Count(op); got != want {
		t.Errorf("%s requests = %d, want %d (counts %v)", op, got, want, e.ft.Counts())
	}
}

func TestDynamoDBDropResponseTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.ft.Add(faulthttp.Rule{Op: "PutItem", Times: 1, Fault: faulthttp.DropResponse(faulthttp.DropTerminal)})

	err := e.put(context.Background(), e.client(), "k", false)
	var ie *faulthttp.InjectedError
	if !errors.As(err, &ie) {
		t.Fatalf("PutItem err = %v, want an *InjectedError", err)
	}
	if !ie.Landed || ie.Retryable || ie.StatusCode != 200 {
		t.Errorf("InjectedError = %+v, want landed, terminal, status 200", *ie)
	}
	if !e.exists(t, "k") {
		t.Error("item missing although the dropped write reached the server")
	}
	e.wantCount(t, "PutItem", 1)
	if h.Hits() != 1 {
		t.Errorf("rule hits = %d, want 1", h.Hits())
	}
}

func TestDynamoDBDropResponseRetryable(t *testing.T) {
	t.Parallel()

	// A conditional write whose response is lost is retried by the SDK's
	// default retryer; the retry fails its condition against the first
	// attempt's own write.
	t.Run("conditional", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Times: 1, Fault: faulthttp.DropResponse(faulthttp.DropRetryable)})

		err := e.put(context.Background(), e.client(), "k", true)
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			t.Fatalf("PutItem err = %v, want ConditionalCheckFailedException", err)
		}
		var ie *faulthttp.InjectedError
		if errors.As(err, &ie) {
			t.Errorf("the dropped first attempt leaked into the final error: %v", err)
		}
		if !e.exists(t, "k") {
			t.Error("item missing although the first attempt landed")
		}
		e.wantCount(t, "PutItem", 2)
	})

	// An unconditional write whose response is lost is retried and
	// succeeds: the caller never learns that it was written twice.
	t.Run("unconditional", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Times: 1, Fault: faulthttp.DropResponse(faulthttp.DropRetryable)})

		if err := e.put(context.Background(), e.client(), "k", false); err != nil {
			t.Fatalf("PutItem: %v", err)
		}
		if !e.exists(t, "k") {
			t.Error("item missing")
		}
		e.wantCount(t, "PutItem", 2)
	})

	// With retries disabled the retryable error surfaces as is.
	t.Run("no retries", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Fault: faulthttp.DropResponse(faulthttp.DropRetryable)})

		err := e.put(context.Background(), e.client(noRetries), "k", true)
		var ie *faulthttp.InjectedError
		if !errors.As(err, &ie) || !ie.Retryable || !ie.Landed {
			t.Fatalf("PutItem err = %v, want a retryable, landed *InjectedError", err)
		}
		var maxErr *retry.MaxAttemptsError
		if !errors.As(err, &maxErr) {
			t.Errorf("err = %v, want it wrapped in *retry.MaxAttemptsError", err)
		}
		if !e.exists(t, "k") {
			t.Error("item missing although the write landed")
		}
		e.wantCount(t, "PutItem", 1)
	})
}

func TestDynamoDBFailBeforeSend(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")

	t.Run("not retryable", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Fault: faulthttp.FailBeforeSend(faulthttp.NotRetryable(boom))})

		err := e.put(context.Background(), e.client(), "k", false)
		if !errors.Is(err, boom) {
			t.Fatalf("PutItem err = %v, want it to wrap %v", err, boom)
		}
		if e.exists(t, "k") {
			t.Error("item stored although the request was never sent")
		}
		e.wantCount(t, "PutItem", 1)
	})

	// Any error from the HTTP client counts as a retryable connection
	// error for the SDK, so a plain error is retried.
	t.Run("plain error is retried", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Times: 1, Fault: faulthttp.FailBeforeSend(boom)})

		if err := e.put(context.Background(), e.client(quickRetries(3)), "k", true); err != nil {
			t.Fatalf("PutItem: %v", err)
		}
		if !e.exists(t, "k") {
			t.Error("item missing after the successful retry")
		}
		e.wantCount(t, "PutItem", 2)
	})
}

func TestDynamoDBDelay(t *testing.T) {
	t.Parallel()

	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Fault: faulthttp.Delay(time.Minute)})

		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := e.put(ctx, e.client(), "k", false)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("PutItem err = %v, want context.DeadlineExceeded", err)
		}
		if elapsed := time.Since(start); elapsed > 20*time.Second {
			t.Errorf("PutItem took %v; the delay ignored the context", elapsed)
		}
		if e.exists(t, "k") {
			t.Error("item stored although the delayed request was cancelled before forwarding")
		}
		// The SDK does not retry a cancelled request.
		e.wantCount(t, "PutItem", 1)
	})

	t.Run("elapsed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		const d = 300 * time.Millisecond
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Times: 1, Fault: faulthttp.Delay(d)})

		start := time.Now()
		if err := e.put(context.Background(), e.client(), "k", false); err != nil {
			t.Fatalf("PutItem: %v", err)
		}
		if elapsed := time.Since(start); elapsed < d {
			t.Errorf("PutItem took %v, want at least %v", elapsed, d)
		}
		if !e.exists(t, "k") {
			t.Error("item missing after the delayed write")
		}
	})
}

func TestDynamoDBDelayResponse(t *testing.T) {
	t.Parallel()

	t.Run("caller times out after the write landed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Fault: faulthttp.DelayResponse(time.Minute)})

		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		err := e.put(ctx, e.client(), "k", true)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("PutItem err = %v, want context.DeadlineExceeded", err)
		}
		if !e.exists(t, "k") {
			t.Error("item missing although the request was forwarded before the delay")
		}
		e.wantCount(t, "PutItem", 1)
	})

	t.Run("late response", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		const d = 300 * time.Millisecond
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Times: 1, Fault: faulthttp.DelayResponse(d)})

		start := time.Now()
		if err := e.put(context.Background(), e.client(), "k", true); err != nil {
			t.Fatalf("PutItem: %v", err)
		}
		if elapsed := time.Since(start); elapsed < d {
			t.Errorf("PutItem took %v, want at least %v", elapsed, d)
		}
		if !e.exists(t, "k") {
			t.Error("item missing")
		}
	})
}

func TestDynamoDBStatus(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name  string
		fault faulthttp.Fault
		check func(error) bool
	}{
		{"throttling", faulthttp.Throttling(), func(err error) bool {
			var e *types.ThrottlingException
			return errors.As(err, &e)
		}},
		{"throughput exceeded", faulthttp.ThroughputExceeded(), func(err error) bool {
			var e *types.ProvisionedThroughputExceededException
			return errors.As(err, &e)
		}},
		{"internal server error", faulthttp.InternalServerError(), func(err error) bool {
			var e *types.InternalServerError
			return errors.As(err, &e)
		}},
	} {
		t.Run(tc.name+" without retries", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.ft.Add(faulthttp.Rule{Op: "PutItem", Fault: tc.fault})

			err := e.put(context.Background(), e.client(noRetries), "k", false)
			if !tc.check(err) {
				t.Fatalf("PutItem err = %v (%T), want the typed %s error", err, err, tc.name)
			}
			if e.exists(t, "k") {
				t.Error("item stored although the request was answered by the fault")
			}
			e.wantCount(t, "PutItem", 1)
		})
	}

	// The SDK's default retryer retries a throttled request.
	t.Run("throttling retried", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.ft.Add(faulthttp.Rule{Op: "PutItem", Times: 1, Fault: faulthttp.Throttling()})

		if err := e.put(context.Background(), e.client(), "k", false); err != nil {
			t.Fatalf("PutItem: %v", err)
		}
		if !e.exists(t, "k") {
			t.Error("item missing after the retry")
		}
		e.wantCount(t, "PutItem", 2)
		if h.Hits() != 1 {
			t.Errorf("rule hits = %d, want 1", h.Hits())
		}
	})

	t.Run("throttling exhausts attempts", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.ft.Add(faulthttp.Rule{Op: "PutItem", Fault: faulthttp.Throttling()})

		err := e.put(context.Background(), e.client(quickRetries(3)), "k", false)
		var te *types.ThrottlingException
		var maxErr *retry.MaxAttemptsError
		if !errors.As(err, &te) || !errors.As(err, &maxErr) {
			t.Fatalf("PutItem err = %v, want ThrottlingException inside MaxAttemptsError", err)
		}
		if maxErr.Attempt != 3 {
			t.Errorf("MaxAttemptsError.Attempt = %d, want 3", maxErr.Attempt)
		}
		e.wantCount(t, "PutItem", 3)
		if e.exists(t, "k") {
			t.Error("item stored although every attempt was throttled")
		}
	})
}

func TestDynamoDBBodyMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	boom := errors.New("boom")
	h := e.ft.Add(faulthttp.Rule{Op: "PutItem", BodyContains: `"lock-a"`, Fault: faulthttp.FailBeforeSend(faulthttp.NotRetryable(boom))})
	c := e.client()

	if err := e.put(context.Background(), c, "lock-b", true); err != nil {
		t.Fatalf("PutItem lock-b: %v", err)
	}
	if err := e.put(context.Background(), c, "lock-a", true); !errors.Is(err, boom) {
		t.Fatalf("PutItem lock-a err = %v, want %v", err, boom)
	}
	if !e.exists(t, "lock-b") || e.exists(t, "lock-a") {
		t.Error("want lock-b stored and lock-a not")
	}
	if h.Hits() != 1 {
		t.Errorf("rule hits = %d, want 1", h.Hits())
	}

	// Once removed, the rule no longer applies and the body still arrives
	// intact.
	h.Remove()
	if err := e.put(context.Background(), c, "lock-a", true); err != nil {
		t.Fatalf("PutItem lock-a after Remove: %v", err)
	}
	if !e.exists(t, "lock-a") {
		t.Error("lock-a missing after Remove")
	}
}

func TestDynamoDBCountsAndHook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var seen []string
	e.ft.OnRequest = func(op string) {
		mu.Lock()
		seen = append(seen, op)
		mu.Unlock()
	}
	e.ft.Add(faulthttp.Rule{Op: "DeleteItem", Fault: faulthttp.FailBeforeSend(faulthttp.NotRetryable(errors.New("no")))})
	c := e.client()
	ctx := context.Background()
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}

	if err := e.put(ctx, c, "k", false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.table),
		Key:                       key,
		UpdateExpression:          aws.String("SET #o = :o"),
		ExpressionAttributeNames:  map[string]string{"#o": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: "you"}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: key}); err == nil {
		t.Fatal("DeleteItem succeeded, want the injected failure")
	}

	want := map[string]int{"PutItem": 1, "GetItem": 2, "UpdateItem": 1, "DeleteItem": 1}
	got := e.ft.Counts()
	if len(got) != len(want) {
		t.Errorf("Counts() = %v, want %v", got, want)
	}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("Counts()[%s] = %d, want %d", op, got[op], n)
		}
	}
	mu.Lock()
	if strings.Join(seen, ",") != "PutItem,GetItem,GetItem,UpdateItem,DeleteItem" {
		t.Errorf("OnRequest saw %v", seen)
	}
	mu.Unlock()

	e.ft.Reset()
	if got := e.ft.Counts(); len(got) != 0 {
		t.Errorf("Counts() after Reset = %v, want empty", got)
	}
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: key}); err != nil {
		t.Fatal(err)
	}
	if got := e.ft.Counts(); len(got) != 1 || got["GetItem"] != 1 {
		t.Errorf("Counts() after Reset and one GetItem = %v", got)
	}
}
