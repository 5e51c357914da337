package ddbtest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// These tests exercise Endpoint's decisions without a DynamoDB server: they
// set DYNAMODB_ENDPOINT themselves, to nothing, to dead or fake servers.

// outcomeTB is a testing.TB whose Skipf and Fatalf record the outcome and
// end the calling goroutine, as the real ones do, instead of ending the
// test. Methods Endpoint does not use fall through to the embedded real TB.
type outcomeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (o *outcomeTB) Helper() {}

func (o *outcomeTB) Skipf(format string, args ...any) {
	o.skipped, o.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (o *outcomeTB) Fatalf(format string, args ...any) {
	o.failed, o.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// callEndpoint calls Endpoint in a goroutine of its own, so that Skipf and
// Fatalf can end it, and reports what happened.
func callEndpoint(t *testing.T) (string, *outcomeTB) {
	o := &outcomeTB{TB: t}
	var endpoint string
	done := make(chan struct{})
	go func() {
		defer close(done)
		endpoint = Endpoint(o)
	}()
	<-done
	return endpoint, o
}

func TestEndpointUnsetSkipsOutsideCI(t *testing.T) {
	t.Setenv(EndpointEnv, "")
	t.Setenv("CI", "")
	_, o := callEndpoint(t)
	if !o.skipped || o.failed {
		t.Fatalf("skipped=%v failed=%v, want a skip", o.skipped, o.failed)
	}
	for _, want := range []string{EndpointEnv, "make test"} {
		if !strings.Contains(o.msg, want) {
			t.Errorf("skip message %q does not mention %q", o.msg, want)
		}
	}
}

func TestEndpointUnsetFailsInCI(t *testing.T) {
	t.Setenv(EndpointEnv, "")
	t.Setenv("CI", "true")
	_, o := callEndpoint(t)
	if !o.failed || o.skipped {
		t.Fatalf("skipped=%v failed=%v, want a failure", o.skipped, o.failed)
	}
	for _, want := range []string{EndpointEnv, "make test"} {
		if !strings.Contains(o.msg, want) {
			t.Errorf("failure message %q does not mention %q", o.msg, want)
		}
	}
}

// deadEndpoint returns the URL of a loopback port on which nothing listens.
func deadEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestEndpointUnreachableFailsEvenOutsideCI(t *testing.T) {
	t.Setenv(EndpointEnv, deadEndpoint(t))
	t.Setenv("CI", "")
	start := time.Now()
	_, o := callEndpoint(t)
	if !o.failed || o.skipped {
		t.Fatalf("skipped=%v failed=%v, want a failure", o.skipped, o.failed)
	}
	if !strings.Contains(o.msg, "no DynamoDB server answers") {
		t.Errorf("failure message %q does not say that nothing answers", o.msg)
	}
	if d := time.Since(start); d > probeTimeout+5*time.Second { // slack for a busy machine
		t.Errorf("Endpoint took %v to give up, want at most about %v", d, probeTimeout)
	}
}

func TestEndpointMalformedFails(t *testing.T) {
	for _, endpoint := range []string{"localhost:8000", "127.0.0.1:8000", "http://", "ftp://example.com"} {
		t.Run(endpoint, func(t *testing.T) {
			t.Setenv(EndpointEnv, endpoint)
			_, o := callEndpoint(t)
			if !o.failed || o.skipped {
				t.Fatalf("skipped=%v failed=%v, want a failure", o.skipped, o.failed)
			}
		})
	}
}

func TestEndpointNonDynamoDBServerFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "I am not DynamoDB", http.StatusNotFound)
	}))
	defer srv.Close()
	t.Setenv(EndpointEnv, srv.URL)
	_, o := callEndpoint(t)
	if !o.failed || o.skipped {
		t.Fatalf("skipped=%v failed=%v, want a failure", o.skipped, o.failed)
	}
}

func TestEndpointChecksOncePerEndpoint(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if got := r.Header.Get("X-Amz-Target"); got != "DynamoDB_20120810.ListTables" {
			http.Error(w, "unexpected target "+got, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprint(w, `{"TableNames":[]}`)
	}))
	defer srv.Close()
	t.Setenv(EndpointEnv, srv.URL)

	for i := 0; i < 3; i++ {
		got, o := callEndpoint(t)
		if o.failed || o.skipped {
			t.Fatalf("call %d: skipped=%v failed=%v: %s", i, o.skipped, o.failed, o.msg)
		}
		if got != srv.URL {
			t.Fatalf("call %d: Endpoint = %q, want %q", i, got, srv.URL)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the server got %d requests, want 1 (the check must be cached)", n)
	}
}

func TestTableName(t *testing.T) {
	long := strings.Repeat("x", 300)
	seen := map[string]bool{}
	for _, testName := range []string{"TestA", "TestA/sub test#1", "Test/ünïcode*?", long, "TestA"} {
		name := tableName(testName)
		if len(name) < 3 || len(name) > 255 {
			t.Errorf("tableName(%q) = %q: length %d out of [3, 255]", testName, name, len(name))
		}
		for _, r := range name {
			valid := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
				r == '_' || r == '-' || r == '.'
			if !valid {
				t.Errorf("tableName(%q) = %q contains %q", testName, name, r)
			}
		}
		if seen[name] {
			t.Errorf("tableName(%q) = %q twice", testName, name)
		}
		seen[name] = true
	}
}
