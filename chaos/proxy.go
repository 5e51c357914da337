package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault kinds a proxy applies to the requests of its worker.
const (
	faultNone      = ""
	faultBlackhole = "blackhole" // a partition: requests are held, never forwarded, until healed
	faultDrop      = "drop"      // writes are forwarded, then the connection closes without an answer
	faultThrottle  = "throttle"  // answered ThrottlingException without forwarding
	faultServer    = "5xx"       // answered 500 without forwarding
	faultReset     = "reset"     // the connection closes without forwarding
	faultLatency   = "latency"   // forwarded after a delay
)

// fault is a proxy's current fault: Kind applies to each request with
// probability P (1 when zero); Delay is the latency fault's.
type fault struct {
	Kind  string
	P     float64
	Delay time.Duration
}

// proxy is one worker's way to DynamoDB Local, so that one worker can be
// partitioned or slowed alone.
type proxy struct {
	target string
	ln     net.Listener
	srv    *http.Server
	fwd    *http.Client

	mu     sync.Mutex
	cur    fault
	healed chan struct{} // closed when the current fault is replaced
	rnd    *rand.Rand
}

func startProxy(target string, seed uint64) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{
		target: strings.TrimRight(target, "/"),
		ln:     ln,
		fwd:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		healed: make(chan struct{}),
		rnd:    rand.New(rand.NewPCG(seed, 7)),
	}
	p.srv = &http.Server{Handler: p}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the endpoint the worker talks to.
func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) close() {
	p.set(fault{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	_ = p.srv.Close()
}

// set replaces the current fault; requests held by a partition are then
// forwarded.
func (p *proxy) set(f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur = f
	close(p.healed)
	p.healed = make(chan struct{})
}

// pick returns the fault to apply to one request.
func (p *proxy) pick() (fault, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.cur
	if f.Kind != faultNone && f.P > 0 && p.rnd.Float64() >= f.P {
		f = fault{}
	}
	return f, p.healed
}

func isWrite(target string) bool {
	for _, op := range []string{"UpdateItem", "PutItem", "DeleteItem", "TransactWriteItems"} {
		if strings.HasSuffix(target, "."+op) {
			return true
		}
	}
	return false
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		hangUp(w)
		return
	}
	f, healed := p.pick()
	switch f.Kind {
	case faultBlackhole:
		select {
		case <-healed: // the partition healed: the request goes through late
		case <-r.Context().Done():
			return
		}
	case faultThrottle:
		answer(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ThrottlingException", "Rate of requests exceeds the allowed throughput.")
		return
	case faultServer:
		answer(w, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error")
		return
	case faultReset:
		hangUp(w)
		return
	case faultLatency:
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		hangUp(w)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.fwd.Do(req)
	if err != nil {
		hangUp(w)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || (f.Kind == faultDrop && isWrite(r.Header.Get("X-Amz-Target"))) {
		hangUp(w) // the write landed; its answer is lost
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

func answer(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"__type":"`+typ+`","message":"`+msg+`"}`)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
