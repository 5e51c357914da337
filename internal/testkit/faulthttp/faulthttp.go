// Package faulthttp injects faults into the HTTP traffic between the AWS SDK
// and a real DynamoDB endpoint, so that tests can drive a client through
// failures that are hard to provoke otherwise: slow requests, requests that
// never leave the client, writes that land while the caller sees an error,
// late responses and throttling.
//
// A Transport wraps a base http.RoundTripper. It is plugged into the SDK
// through dynamodb.Options.HTTPClient, which accepts any value with a
// Do(*http.Request) (*http.Response, error) method:
//
//	ft := faulthttp.New(nil)
//	client := dynamodb.New(dynamodb.Options{HTTPClient: ft /* , ... */})
//	h := ft.Add(faulthttp.Rule{Op: "PutItem", Times: 1,
//		Fault: faulthttp.DropResponse(faulthttp.DropRetryable)})
//	defer h.Remove()
//
// Rules select requests by DynamoDB operation (taken from the X-Amz-Target
// header) and optionally by a substring of the JSON request body. Rules can be
// added and removed at any time, also while requests are in flight.
//
// A custom HTTPClient replaces the SDK's own buildable client, so the SDK's
// default dial and read timeouts do not apply; the base transport given to New
// decides those.
package faulthttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Operation returns the DynamoDB operation named by the request's X-Amz-Target
// header: "DynamoDB_20120810.UpdateItem" yields "UpdateItem". It returns the
// header unchanged if it has no dot, and "" if the header is absent.
func Operation(req *http.Request) string {
	target := req.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}

// Transport is an http.RoundTripper that counts requests per DynamoDB
// operation and applies the fault of the first matching rule before, instead
// of, or after forwarding a request to its base transport.
//
// The zero value is ready to use and forwards through a clone of
// http.DefaultTransport. A Transport is safe for concurrent use; Base and
// OnRequest must be set before the first request and not changed afterwards.
type Transport struct {
	// Base is the transport requests are forwarded to. If nil, a clone of
	// http.DefaultTransport is created on first use.
	Base http.RoundTripper

	// OnRequest, if non-nil, is called synchronously with the operation name
	// of every request the Transport sees, after it is counted and before any
	// fault applies. It may be called from several goroutines at once.
	OnRequest func(op string)

	initOnce sync.Once
	base     http.RoundTripper
	client   *http.Client

	mu     sync.Mutex
	rules  []*Handle
	counts map[string]int
}

// New returns a Transport forwarding to base, or to a clone of
// http.DefaultTransport if base is nil.
func New(base http.RoundTripper) *Transport {
	return &Transport{Base: base}
}

func (t *Transport) init() {
	t.initOnce.Do(func() {
		t.base = t.Base
		if t.base == nil {
			if dt, ok := http.DefaultTransport.(*http.Transport); ok {
				t.base = dt.Clone()
			} else {
				t.base = http.DefaultTransport
			}
		}
		t.client = &http.Client{Transport: t}
	})
}

// Client returns an *http.Client that sends every request through t. It has
// no timeout and is shared: callers must not modify it.
func (t *Transport) Client() *http.Client {
	t.init()
	return t.client
}

// Do sends req through t the way an *http.Client would (errors are returned
// as *url.Error), which makes a Transport usable directly as
// dynamodb.Options.HTTPClient.
func (t *Transport) Do(req *http.Request) (*http.Response, error) {
	return t.Client().Do(req)
}

// CloseIdleConnections closes idle connections of the base transport if it
// supports doing so.
func (t *Transport) CloseIdleConnections() {
	t.init()
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Rule selects requests and names the fault to apply to them.
type Rule struct {
	// Op is the DynamoDB operation to match, such as "PutItem". Empty
	// matches every operation.
	Op string

	// BodyContains, if non-empty, restricts the rule to requests whose body
	// contains it as a substring, for instance a key value.
	BodyContains string

	// Times is the number of matching requests the rule applies to; after
	// that the rule no longer matches and is removed. Zero or negative means
	// every matching request until the rule is removed.
	Times int

	// Fault is what happens to a matching request. The zero Fault forwards
	// the request unchanged (and still uses up one of Times).
	Fault Fault
}

// Handle identifies a rule added to a Transport.
type Handle struct {
	t    *Transport
	rule Rule

	// remaining and hits are guarded by t.mu.
	remaining int
	hits      int
}

// Remove removes the rule from its Transport so that it matches no later
// request. A request the rule already matched still gets its fault. Remove
// reports whether the rule was still installed; it is safe to call more than
// once.
func (h *Handle) Remove() bool {
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	return h.t.removeLocked(h)
}

// Hits returns the number of requests the rule has matched so far.
func (h *Handle) Hits() int {
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	return h.hits
}

// Add installs r after the rules already present and returns its handle. When
// several rules match a request, the earliest added one applies and only it
// uses up one of its Times.
func (t *Transport) Add(r Rule) *Handle {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := &Handle{t: t, rule: r, remaining: r.Times}
	t.rules = append(t.rules, h)
	return h
}

// Clear removes every rule.
func (t *Transport) Clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = nil
}

// Counts returns a copy of the number of requests seen per operation since the
// Transport was created or last Reset, whether they were forwarded or not.
// Requests without an X-Amz-Target header are counted under "".
func (t *Transport) Counts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.counts))
	for k, v := range t.counts {
		out[k] = v
	}
	return out
}

// Count returns the number of requests seen for op since the Transport was
// created or last Reset.
func (t *Transport) Count(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[op]
}

// Reset sets all request counts to zero. It does not touch the rules.
func (t *Transport) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts = nil
}

func (t *Transport) removeLocked(h *Handle) bool {
	for i, r := range t.rules {
		if r == h {
			t.rules = append(t.rules[:i:i], t.rules[i+1:]...)
			return true
		}
	}
	return false
}

// match counts the request and returns the fault of the first rule that
// matches it, using up one of that rule's Times.
func (t *Transport) match(op string, body []byte) (Fault, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = make(map[string]int)
	}
	t.counts[op]++
	for _, h := range t.rules {
		if h.rule.Op != "" && h.rule.Op != op {
			continue
		}
		if h.rule.BodyContains != "" && !bytes.Contains(body, []byte(h.rule.BodyContains)) {
			continue
		}
		h.hits++
		if h.rule.Times > 0 {
			h.remaining--
			if h.remaining <= 0 {
				t.removeLocked(h)
			}
		}
		return h.rule.Fault, true
	}
	return Fault{}, false
}

// RoundTrip implements http.RoundTripper. It buffers the request body so that
// rules can inspect it, then forwards a copy of the request whose Body and
// GetBody yield the same bytes, unless the matching fault says otherwise. The
// original request's Body is always closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	fwd, body, err := bufferBody(req)
	if err != nil {
		return nil, err
	}
	op := Operation(req)
	fault, matched := t.match(op, body)
	if t.OnRequest != nil {
		t.OnRequest(op)
	}
	if !matched {
		return t.base.RoundTrip(fwd)
	}
	return fault.apply(t.base, fwd, op, body)
}

// bufferBody reads and closes req.Body and returns a shallow copy of req whose
// Body and GetBody replay the bytes read.
func bufferBody(req *http.Request) (*http.Request, []byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil, nil
	}
	body, err := io.ReadAll(req.Body)
	closeErr := req.Body.Close()
	if err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("faulthttp: reading request body: %w", err)
	}
	fwd := req.Clone(req.Context())
	fwd.Body = io.NopCloser(bytes.NewReader(body))
	fwd.GetBody = func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(body)), nil
	}
	fwd.ContentLength = int64(len(body))
	return fwd, body, nil
}
