package main

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
)

// maxIdleConnsPerHost replaces the SDK's default of 10 idle connections per
// host: rows with more than 10 requests in flight would otherwise open and
// close a TCP connection for most requests, which measures connection churn
// rather than the library.
const maxIdleConnsPerHost = 256

// clients builds DynamoDB clients for the emulator, all sharing one
// connection pool unless they need a fault-injecting transport.
type clients struct {
	endpoint string
	http     *awshttp.BuildableClient
}

func newClients(endpoint string) *clients {
	return &clients{
		endpoint: endpoint,
		http: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = 2 * maxIdleConnsPerHost
			t.MaxIdleConnsPerHost = maxIdleConnsPerHost
		}),
	}
}

// baseTransport returns a transport with the pool settings of the shared
// client, for a fault-injecting wrapper.
func (c *clients) baseTransport() *http.Transport { return c.http.GetTransport() }

// client returns a DynamoDB client for the emulator whose requests ctr
// counts (when not nil), sending through httpClient (the shared pool when
// nil).
func (c *clients) client(ctr *counter, httpClient aws.HTTPClient) *dynamodb.Client {
	if httpClient == nil {
		httpClient = c.http
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(c.endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("bench", "bench", ""),
		HTTPClient:   httpClient,
	}, func(o *dynamodb.Options) {
		// DynamoDB Local omits the response checksum header on error
		// responses (see internal/ddbtest.EmulatorOptions); the SDK would
		// log a spurious warning for every conditional failure. Emulator
		// only: the bench never talks to Amazon DynamoDB.
		o.DisableValidateResponseChecksum = true
		if ctr != nil {
			o.APIOptions = append(o.APIOptions, ctr.register)
		}
	})
}

// counter counts DynamoDB requests by operation name with two smithy
// middlewares: one in the Initialize step (once per API call) and one at the
// end of the Finalize step, after the SDK's retry middleware, so once per
// HTTP attempt. "Requests" in the report are attempts: what DynamoDB sees
// and bills.
type counter struct {
	mu       sync.Mutex
	calls    map[string]int64
	attempts map[string]int64
	errs     map[string]int64 // by error class
	logOn    bool
	log      []attempt
}

// attempt is one HTTP attempt, logged only while logging is on.
type attempt struct {
	op    string
	start time.Time
	dur   time.Duration
	err   string
}

func newCounter() *counter {
	return &counter{calls: map[string]int64{}, attempts: map[string]int64{}, errs: map[string]int64{}}
}

func (c *counter) register(st *middleware.Stack) error {
	err := st.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchCountCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := middleware.GetOperationName(ctx)
			c.mu.Lock()
			c.calls[op]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	if err != nil {
		return err
	}
	return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("BenchCountAttempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			op := middleware.GetOperationName(ctx)
			start := time.Now()
			c.mu.Lock()
			c.attempts[op]++
			c.mu.Unlock()
			out, md, err := next.HandleFinalize(ctx, in)
			dur := time.Since(start)
			class := errorClass(err)
			c.mu.Lock()
			if class != "" {
				c.errs[class]++
			}
			if c.logOn {
				c.log = append(c.log, attempt{op: op, start: start, dur: dur, err: class})
			}
			c.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

// errorClass names the kind of a failed attempt, "" for success.
func errorClass(err error) string {
	if err == nil {
		return ""
	}
	var api smithy.APIError
	switch {
	case errors.As(err, &api):
		return api.ErrorCode()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "other"
	}
}

// snapshot is a copy of a counter's totals.
type snapshot struct {
	calls, attempts, errs map[string]int64
}

func (c *counter) snapshot() snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := func(m map[string]int64) map[string]int64 {
		out := make(map[string]int64, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return snapshot{calls: cp(c.calls), attempts: cp(c.attempts), errs: cp(c.errs)}
}

// setLog turns the attempt log on or off; turning it on clears it.
func (c *counter) setLog(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logOn = on
	if on {
		c.log = nil
	}
}

// attempts returns a copy of the attempt log, by start time.
func (c *counter) attemptLog() []attempt {
	c.mu.Lock()
	out := append([]attempt(nil), c.log...)
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// sub returns the per-key differences a − b, without zero entries.
func sub(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// since returns the attempts, calls and errors counted after s.
func (c *counter) since(s snapshot) snapshot {
	now := c.snapshot()
	return snapshot{calls: sub(now.calls, s.calls), attempts: sub(now.attempts, s.attempts), errs: sub(now.errs, s.errs)}
}

// newLocks returns a lock client as cfg says, on the DynamoDB table through
// c.
func newLocks(c dynamodbstore.StoreAPI, table string, cfg lock.Config) (*lock.Client, error) {
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table})
	if err != nil {
		return nil, err
	}
	cfg.Store = store
	return lock.New(cfg)
}
