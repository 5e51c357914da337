// Package ddbtest connects integration tests to a DynamoDB server.
//
// The server is named by the DYNAMODB_ENDPOINT environment variable. "make
// test" starts a private DynamoDB Local (AWS's emulator) for the duration of
// the test run and sets the variable; to use a server that is already
// running, set it yourself, e.g. DYNAMODB_ENDPOINT=http://127.0.0.1:8000.
//
// A typical test:
//
//	func TestSomething(t *testing.T) {
//		c := ddbtest.Client(t)
//		table := ddbtest.NewTable(t, c, ddbtest.TableSpec{})
//		// ... use c and table ...
//	}
package ddbtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// EndpointEnv is the environment variable that holds the URL of the DynamoDB
// server used by integration tests.
const EndpointEnv = "DYNAMODB_ENDPOINT"

// Region is the AWS region Client configures. DynamoDB Local accepts any
// region, but keeps a separate set of tables for each region and access key
// unless it is started with -sharedDb.
const Region = "us-east-1"

// Static credentials used by Client. DynamoDB Local accepts any.
const (
	accessKeyID     = "ddbtest"
	secretAccessKey = "ddbtest"
)

// probeTimeout bounds the reachability check Endpoint performs.
const probeTimeout = 5 * time.Second

// Endpoint returns the URL of the DynamoDB server that integration tests must
// use, taken from the DYNAMODB_ENDPOINT environment variable.
//
// If the variable is unset or empty, Endpoint stops the test: with t.Fatal
// when the CI environment variable is true (so that a misconfigured CI job
// cannot pass by skipping every integration test), and with t.Skip
// otherwise. If the variable is set, Endpoint checks once per process and
// endpoint that a DynamoDB server answers ListTables there within a few
// seconds, and calls t.Fatal if not: a configured but unusable endpoint is
// always a failure, never a skip.
func Endpoint(t testing.TB) string {
	t.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		if inCI() {
			t.Fatalf("integration tests need DynamoDB, but %s is not set; "+
				"run them with `make test`, which starts DynamoDB Local", EndpointEnv)
		}
		t.Skipf("SKIPPING INTEGRATION TEST: %s is not set. "+
			"Run `make test` to run it against a private DynamoDB Local, "+
			"or set %s=http://HOST:PORT to use a running DynamoDB server.",
			EndpointEnv, EndpointEnv)
	}
	if err := probe(endpoint); err != nil {
		t.Fatalf("%s=%s: %v", EndpointEnv, endpoint, err)
	}
	return endpoint
}

// inCI reports whether the CI environment variable says that the tests run
// in continuous integration. Most CI services set CI=true; any value
// strconv.ParseBool accepts as true counts.
func inCI() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}

// probes caches the result of the reachability check, one *probeResult per
// endpoint, so that a run of many tests pays for it (or waits for its
// timeout) only once.
var probes sync.Map

type probeResult struct {
	once sync.Once
	err  error
}

func probe(endpoint string) error {
	v, _ := probes.LoadOrStore(endpoint, new(probeResult))
	p := v.(*probeResult)
	p.once.Do(func() { p.err = checkEndpoint(endpoint) })
	return p.err
}

// checkEndpoint validates endpoint and calls ListTables on it. It does not
// use a test's context because its result is shared by all tests.
func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not a valid endpoint URL; want e.g. http://127.0.0.1:8000")
	}
	c := dynamodb.New(clientOptions(endpoint), EmulatorOptions, func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); err != nil {
		return fmt.Errorf("no DynamoDB server answers there (ListTables: %w)", err)
	}
	return nil
}

// Client returns a DynamoDB client for the server named by Endpoint, which
// it calls first (so Client may skip or fail the test as Endpoint does).
// The client uses static credentials, region us-east-1 and the emulator
// adjustments of EmulatorOptions; optFns are applied after those and may
// override any of them.
func Client(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	endpoint := Endpoint(t)
	fns := append([]func(*dynamodb.Options){EmulatorOptions}, optFns...)
	return dynamodb.New(clientOptions(endpoint), fns...)
}

func clientOptions(endpoint string) dynamodb.Options {
	return dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""),
	}
}

// EmulatorOptions adjusts o for talking to DynamoDB Local; pass it to
// dynamodb.New or dynamodb.NewFromConfig. Do not use it against the real
// DynamoDB service.
//
// It turns off the validation of the X-Amz-Crc32 response checksum.
// DynamoDB Local (3.3.1, as every earlier version) sends that header on
// successful responses but omits it on error responses (ConditionalCheckFailedException,
// ResourceNotFoundException, ...). The SDK then checks the body against a
// checksum of 0, and because this happens when the response body is closed,
// after the error has been decoded, the request result is still correct and
// only a misleading warning is logged for every such response:
//
//	failed to close HTTP response body, this may affect connection reuse:
//	response did not match expected checksum, 0, <crc32 of the body>
//
// Lease and lock code provokes conditional-check failures all the time, so
// the warning would drown everything else. The real service always sends the
// header, so production clients keep the check.
func EmulatorOptions(o *dynamodb.Options) {
	o.DisableValidateResponseChecksum = true
}

// UnreachableClient returns a client of a DynamoDB endpoint on which
// nothing listens (a closed loopback port): every request fails with a
// refused connection, as when the network or the service is down. The SDK
// makes one attempt per request, so the refusal is the error (with
// retries, a short request timeout would end the SDK's backoff first). It
// sends nothing anywhere else.
func UnreachableClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return dynamodb.New(clientOptions("http://"+addr), EmulatorOptions, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
}
