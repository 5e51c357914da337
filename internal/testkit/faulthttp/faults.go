package faulthttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

type faultKind int

const (
	kindNone faultKind = iota
	kindDelay
	kindFailBeforeSend
	kindDropResponse
	kindDelayResponse
	kindStatus
)

// Fault describes what a Transport does to a request matched by a rule. Build
// one with Delay, FailBeforeSend, DropResponse, DelayResponse, Status or
// APIError. The zero Fault forwards the request unchanged.
type Fault struct {
	kind   faultKind
	d      time.Duration
	err    error
	drop   DropMode
	status int
	body   []byte
}

// Delay returns a fault that waits d and then forwards the request. If the
// request's context ends during the wait, the request is not forwarded and the
// context's error is returned.
func Delay(d time.Duration) Fault {
	return Fault{kind: kindDelay, d: d}
}

// FailBeforeSend returns a fault that returns err without forwarding the
// request, so the server certainly did not see it. A nil err is replaced by a
// retryable *InjectedError.
//
// The SDK treats every error from its HTTP client as a retryable connection
// error unless the error chain has a RetryableError() bool method reporting
// false; wrap err with NotRetryable to make the failure terminal.
func FailBeforeSend(err error) Fault {
	return Fault{kind: kindFailBeforeSend, err: err}
}

// DropMode selects the error a DropResponse fault returns.
type DropMode int

const (
	// DropRetryable makes the returned *InjectedError retryable for the SDK,
	// so the SDK sends the request again although the first attempt landed.
	DropRetryable DropMode = iota

	// DropTerminal makes the returned *InjectedError non-retryable for the
	// SDK, so the error surfaces to the caller at once.
	DropTerminal
)

// DropResponse returns a fault that forwards the request, reads and discards
// the server's response, whatever its status, and returns an *InjectedError
// with Landed set, as if the connection broke after the server processed the
// request. mode decides whether the SDK retries that error.
func DropResponse(mode DropMode) Fault {
	return Fault{kind: kindDropResponse, drop: mode}
}

// DelayResponse returns a fault that forwards the request, reads the whole
// response and then waits d before returning it. If the request's context ends
// during the wait, the response is discarded and the context's error is
// returned, although the server has processed the request.
func DelayResponse(d time.Duration) Fault {
	return Fault{kind: kindDelayResponse, d: d}
}

// Status returns a fault that answers with a synthetic response of the given
// HTTP status code and body without forwarding the request. The response has
// the DynamoDB JSON content type, a correct X-Amz-Crc32 header, and, if body
// is a JSON object with a "__type" member, an X-Amzn-ErrorType header naming
// the error (the part after '#').
func Status(code int, body string) Fault {
	return Fault{kind: kindStatus, status: code, body: []byte(body)}
}

// ErrorNamespace is the prefix DynamoDB puts before error names in the
// "__type" member of its JSON error responses.
const ErrorNamespace = "com.amazonaws.dynamodb.v20120810#"

// APIError returns a Status fault whose body is a DynamoDB JSON error of the
// given type (such as "ThrottlingException") and message.
func APIError(code int, errorType, message string) Fault {
	b, err := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{ErrorNamespace + errorType, message})
	if err != nil {
		// Marshalling two strings cannot fail.
		panic(err)
	}
	return Status(code, string(b))
}

// Throttling returns a fault answering 400 ThrottlingException, which the
// SDK retries as a throttling error.
func Throttling() Fault {
	return APIError(http.StatusBadRequest, "ThrottlingException", "Rate of requests exceeds the allowed throughput (injected by faulthttp).")
}

// ThroughputExceeded returns a fault answering 400
// ProvisionedThroughputExceededException, which the SDK retries as a
// throttling error.
func ThroughputExceeded() Fault {
	return APIError(http.StatusBadRequest, "ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded (injected by faulthttp).")
}

// InternalServerError returns a fault answering 500 InternalServerError,
// which the SDK retries because of its status code.
func InternalServerError() Fault {
	return APIError(http.StatusInternalServerError, "InternalServerError", "Internal server error (injected by faulthttp).")
}

// InjectedError is the error a Transport returns for a DropResponse fault and
// for a FailBeforeSend fault given a nil error. The SDK wraps it (in a
// *url.Error and its own error types); find it with errors.As.
type InjectedError struct {
	// Op is the operation of the failed request.
	Op string

	// Landed reports whether the request reached the server before the
	// failure.
	Landed bool

	// StatusCode is the status of the discarded response when Landed is
	// true, and 0 otherwise.
	StatusCode int

	// Retryable is what RetryableError reports to the SDK.
	Retryable bool
}

// Error describes the injected failure.
func (e *InjectedError) Error() string {
	kind := "terminal"
	if e.Retryable {
		kind = "retryable"
	}
	if e.Landed {
		return fmt.Sprintf("faulthttp: injected %s failure: %s response (status %d) dropped after the server processed the request", kind, e.Op, e.StatusCode)
	}
	return fmt.Sprintf("faulthttp: injected %s failure: %s request not sent", kind, e.Op)
}

// RetryableError reports whether the SDK's retryer may retry the request. The
// standard retryer consults this method before any other check.
func (e *InjectedError) RetryableError() bool { return e.Retryable }

// NotRetryable wraps err so that the SDK's standard retryer does not retry a
// request that failed with it. The result unwraps to err.
func NotRetryable(err error) error {
	return notRetryable{err}
}

type notRetryable struct{ err error }

func (e notRetryable) Error() string        { return e.err.Error() }
func (e notRetryable) Unwrap() error        { return e.err }
func (e notRetryable) RetryableError() bool { return false }

var requestSeq atomic.Uint64

func (f Fault) apply(base http.RoundTripper, req *http.Request, op string, body []byte) (*http.Response, error) {
	ctx := req.Context()
	switch f.kind {
	case kindDelay:
		if err := sleep(ctx, f.d); err != nil {
			return nil, err
		}
		return base.RoundTrip(req)

	case kindFailBeforeSend:
		if f.err != nil {
			return nil, f.err
		}
		return nil, &InjectedError{Op: op, Retryable: true}

	case kindDropResponse:
		resp, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, &InjectedError{
			Op:         op,
			Landed:     true,
			StatusCode: resp.StatusCode,
			Retryable:  f.drop == DropRetryable,
		}

	case kindDelayResponse:
		resp, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if err := sleep(ctx, f.d); err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
		resp.ContentLength = int64(len(data))
		return resp, nil

	case kindStatus:
		return f.syntheticResponse(req), nil

	default:
		return base.RoundTrip(req)
	}
}

func (f Fault) syntheticResponse(req *http.Request) *http.Response {
	h := make(http.Header)
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("Content-Length", strconv.Itoa(len(f.body)))
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(f.body)), 10))
	h.Set("X-Amzn-Requestid", "faulthttp-"+strconv.FormatUint(requestSeq.Add(1), 10))
	if name := errorName(f.body); name != "" {
		h.Set("X-Amzn-ErrorType", name)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", f.status, http.StatusText(f.status)),
		StatusCode:    f.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(f.body)),
		ContentLength: int64(len(f.body)),
		Request:       req,
	}
}

// errorName returns the error name in the "__type" member of a JSON error
// body, without its namespace, or "" if there is none.
func errorName(body []byte) string {
	var v struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	name := v.Type
	if i := strings.LastIndexByte(name, '#'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// sleep waits d or until ctx ends, whichever comes first, and returns ctx's
// error in the latter case.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
