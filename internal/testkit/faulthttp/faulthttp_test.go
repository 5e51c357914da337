package faulthttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recordingBase is a fake base transport that records what it is asked to
// forward and answers 200 with a fixed body.
type recordingBase struct {
	mu     sync.Mutex
	calls  int
	bodies [][]byte
	reqs   []*http.Request
}

func (b *recordingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	b.mu.Lock()
	b.calls++
	b.bodies = append(b.bodies, body)
	b.reqs = append(b.reqs, req)
	b.mu.Unlock()
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(strings.NewReader("{}")),
		ContentLength: 2,
		Request:       req,
	}, nil
}

func (b *recordingBase) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// closeTracker records whether a request body was closed.
type closeTracker struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeTracker) Close() error {
	c.closed.Store(true)
	return nil
}

func newRequest(t *testing.T, ctx context.Context, op, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://dynamodb.invalid/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if op != "" {
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	}
	return req
}

func TestOperation(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"DynamoDB_20120810.UpdateItem", "UpdateItem"},
		{"DynamoDB_20120810.PutItem", "PutItem"},
		{"PutItem", "PutItem"},
		{"", ""},
	} {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		if tc.target != "" {
			req.Header.Set("X-Amz-Target", tc.target)
		}
		if got := Operation(req); got != tc.want {
			t.Errorf("Operation(%q) = %q, want %q", tc.target, got, tc.want)
		}
	}
}

func TestBodyForwardedIntactWithGetBody(t *testing.T) {
	base := &recordingBase{}
	tr := New(base)
	tr.Add(Rule{Op: "PutItem", BodyContains: `"lock-a"`, Fault: Delay(time.Millisecond)})

	const body = `{"TableName":"t","Item":{"pk":{"S":"lock-a"}}}`
	tracker := &closeTracker{Reader: strings.NewReader(body)}
	req := newRequest(t, context.Background(), "PutItem", "")
	req.Body = tracker
	req.ContentLength = int64(len(body))

	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if !tracker.closed.Load() {
		t.Error("original request body was not closed")
	}
	if base.Calls() != 1 {
		t.Fatalf("base saw %d requests, want 1", base.Calls())
	}
	if got := string(base.bodies[0]); got != body {
		t.Errorf("forwarded body = %q, want %q", got, body)
	}
	fwd := base.reqs[0]
	if fwd.ContentLength != int64(len(body)) {
		t.Errorf("forwarded ContentLength = %d, want %d", fwd.ContentLength, len(body))
	}
	if fwd.GetBody == nil {
		t.Fatal("forwarded request has no GetBody")
	}
	rc, err := fwd.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := io.ReadAll(rc)
	if string(again) != body {
		t.Errorf("GetBody yields %q, want %q", again, body)
	}
	if fwd.Header.Get("X-Amz-Target") != "DynamoDB_20120810.PutItem" {
		t.Errorf("forwarded request lost its headers: %v", fwd.Header)
	}
}

func TestRequestWithoutBody(t *testing.T) {
	base := &recordingBase{}
	tr := New(base)
	req, err := http.NewRequest(http.MethodGet, "http://dynamodb.invalid/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := tr.Counts(); got[""] != 1 || len(got) != 1 {
		t.Errorf("Counts() = %v, want map[:1]", got)
	}
}

func TestTimesOrderAndRemove(t *testing.T) {
	base := &recordingBase{}
	tr := New(base)
	fail := errors.New("injected")
	first := tr.Add(Rule{Op: "PutItem", Times: 2, Fault: FailBeforeSend(fail)})
	second := tr.Add(Rule{Op: "PutItem", Fault: Status(http.StatusBadRequest, `{}`)})
	other := tr.Add(Rule{Op: "GetItem", Fault: FailBeforeSend(fail)})

	send := func(op string) (*http.Response, error) {
		resp, err := tr.RoundTrip(newRequest(t, context.Background(), op, "{}"))
		if resp != nil {
			_ = resp.Body.Close()
		}
		return resp, err
	}

	for i := 0; i < 2; i++ {
		if _, err := send("PutItem"); !errors.Is(err, fail) {
			t.Fatalf("PutItem %d: err = %v, want %v", i, err, fail)
		}
	}
	// The first rule is used up; the second one now applies.
	resp, err := send("PutItem")
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("PutItem 3: resp = %v, err = %v, want status 400", resp, err)
	}
	if first.Hits() != 2 || second.Hits() != 1 || other.Hits() != 0 {
		t.Errorf("hits = %d, %d, %d, want 2, 1, 0", first.Hits(), second.Hits(), other.Hits())
	}
	if first.Remove() {
		t.Error("Remove of a used-up rule reported it was still installed")
	}
	if !second.Remove() {
		t.Error("Remove of an installed rule reported false")
	}
	if second.Remove() {
		t.Error("second Remove reported true")
	}
	if _, err := send("PutItem"); err != nil {
		t.Fatalf("PutItem after removal: %v", err)
	}
	if base.Calls() != 1 {
		t.Errorf("base saw %d requests, want 1", base.Calls())
	}
	tr.Clear()
	if _, err := send("GetItem"); err != nil {
		t.Fatalf("GetItem after Clear: %v", err)
	}
	want := map[string]int{"PutItem": 4, "GetItem": 1}
	if got := tr.Counts(); !equalCounts(got, want) {
		t.Errorf("Counts() = %v, want %v", got, want)
	}
	if tr.Count("PutItem") != 4 {
		t.Errorf("Count(PutItem) = %d, want 4", tr.Count("PutItem"))
	}
	tr.Reset()
	if got := tr.Counts(); len(got) != 0 {
		t.Errorf("Counts() after Reset = %v, want empty", got)
	}
}

func TestDelayHonoursContextWithoutForwarding(t *testing.T) {
	base := &recordingBase{}
	tr := New(base)
	tr.Add(Rule{Op: "PutItem", Fault: Delay(time.Minute)})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tr.RoundTrip(newRequest(t, ctx, "PutItem", "{}"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Delay ignored the context: took %v", elapsed)
	}
	if base.Calls() != 0 {
		t.Errorf("base saw %d requests, want 0", base.Calls())
	}
}

func TestDelayResponseHonoursContextAfterForwarding(t *testing.T) {
	base := &recordingBase{}
	tr := New(base)
	tr.Add(Rule{Fault: DelayResponse(time.Minute)})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := tr.RoundTrip(newRequest(t, ctx, "UpdateItem", "{}"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if base.Calls() != 1 {
		t.Errorf("base saw %d requests, want 1", base.Calls())
	}
}

func TestDropResponseErrors(t *testing.T) {
	for _, tc := range []struct {
		mode      DropMode
		retryable bool
	}{
		{DropRetryable, true},
		{DropTerminal, false},
	} {
		base := &recordingBase{}
		tr := New(base)
		tr.Add(Rule{Op: "PutItem", Fault: DropResponse(tc.mode)})
		resp, err := tr.Do(newRequest(t, context.Background(), "PutItem", "{}"))
		if resp != nil {
			t.Errorf("mode %d: got a response, want none", tc.mode)
		}
		var ie *InjectedError
		if !errors.As(err, &ie) {
			t.Fatalf("mode %d: err = %v, want an *InjectedError", tc.mode, err)
		}
		if !ie.Landed || ie.StatusCode != http.StatusOK || ie.Op != "PutItem" || ie.Retryable != tc.retryable {
			t.Errorf("mode %d: InjectedError = %+v", tc.mode, *ie)
		}
		var r interface{ RetryableError() bool }
		if !errors.As(err, &r) || r.RetryableError() != tc.retryable {
			t.Errorf("mode %d: RetryableError() not %v through the error chain", tc.mode, tc.retryable)
		}
		if base.Calls() != 1 {
			t.Errorf("mode %d: base saw %d requests, want 1", tc.mode, base.Calls())
		}
	}
}

func TestFailBeforeSendAndNotRetryable(t *testing.T) {
	base := &recordingBase{}
	tr := New(base)
	cause := errors.New("boom")
	h := tr.Add(Rule{Times: 1, Fault: FailBeforeSend(NotRetryable(cause))})
	_, err := tr.RoundTrip(newRequest(t, context.Background(), "PutItem", "{}"))
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want it to wrap %v", err, cause)
	}
	var r interface{ RetryableError() bool }
	if !errors.As(err, &r) || r.RetryableError() {
		t.Error("NotRetryable error does not report RetryableError() == false")
	}
	if h.Hits() != 1 {
		t.Errorf("Hits() = %d, want 1", h.Hits())
	}

	tr.Add(Rule{Times: 1, Fault: FailBeforeSend(nil)})
	_, err = tr.RoundTrip(newRequest(t, context.Background(), "PutItem", "{}"))
	var ie *InjectedError
	if !errors.As(err, &ie) || ie.Landed || !ie.Retryable {
		t.Fatalf("err = %v, want a retryable *InjectedError that did not land", err)
	}
	if base.Calls() != 0 {
		t.Errorf("base saw %d requests, want 0", base.Calls())
	}
}

func TestStatusResponse(t *testing.T) {
	base := &recordingBase{}
	tr := New(base)
	tr.Add(Rule{Fault: ThroughputExceeded()})
	req := newRequest(t, context.Background(), "GetItem", "{}")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", resp.StatusCode)
	}
	if got := resp.Header.Get("X-Amzn-ErrorType"); got != "ProvisionedThroughputExceededException" {
		t.Errorf("X-Amzn-ErrorType = %q", got)
	}
	if !bytes.Contains(body, []byte(`"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"`)) {
		t.Errorf("body = %s", body)
	}
	if got, want := resp.Header.Get("X-Amz-Crc32"), strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10); got != want {
		t.Errorf("X-Amz-Crc32 = %s, want %s", got, want)
	}
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("ContentLength = %d, want %d", resp.ContentLength, len(body))
	}
	if base.Calls() != 0 {
		t.Errorf("base saw %d requests, want 0", base.Calls())
	}

	// A body without __type gets no error type header.
	tr.Clear()
	tr.Add(Rule{Fault: Status(http.StatusServiceUnavailable, "not json")})
	resp2, err := tr.RoundTrip(newRequest(t, context.Background(), "GetItem", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp2.Body.Close()
	if resp2.StatusCode != http.StatusServiceUnavailable || resp2.Header.Get("X-Amzn-ErrorType") != "" {
		t.Errorf("status = %d, X-Amzn-ErrorType = %q", resp2.StatusCode, resp2.Header.Get("X-Amzn-ErrorType"))
	}
}

// TestConcurrentRulesAndRequests adds and removes rules while requests are in
// flight through a real HTTP server; run it with -race.
func TestConcurrentRulesAndRequests(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.ContentLength != int64(len(body)) {
			http.Error(w, "length mismatch", http.StatusBadRequest)
			return
		}
		served.Add(1)
		_, _ = w.Write(body)
	}))
	defer srv.Close()

	tr := New(nil)
	defer tr.CloseIdleConnections()
	var hooked atomic.Int64
	tr.OnRequest = func(string) { hooked.Add(1) }

	const workers, perWorker = 4, 50
	ops := []string{"PutItem", "GetItem", "UpdateItem", "DeleteItem"}
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			h := tr.Add(Rule{Op: ops[i%len(ops)], Times: 1 + i%3, Fault: Delay(time.Microsecond)})
			s := tr.Add(Rule{Op: ops[(i+1)%len(ops)], BodyContains: "never-present", Fault: Throttling()})
			_ = tr.Counts()
			h.Remove()
			s.Remove()
			time.Sleep(100 * time.Microsecond)
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				op := ops[(w+i)%len(ops)]
				payload := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
				req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(payload))
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
				resp, err := tr.Do(req)
				if err != nil {
					errs <- err
					continue
				}
				got, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK || string(got) != payload {
					errs <- fmt.Errorf("%s: status %d, echo %q, want %q", op, resp.StatusCode, got, payload)
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	churn.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	total := 0
	for _, n := range tr.Counts() {
		total += n
	}
	if total != workers*perWorker {
		t.Errorf("counted %d requests, want %d", total, workers*perWorker)
	}
	if served.Load() != workers*perWorker || hooked.Load() != workers*perWorker {
		t.Errorf("served %d, hooked %d, want %d each", served.Load(), hooked.Load(), workers*perWorker)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
