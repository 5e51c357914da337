package rvnlease

import (
	"time"

	"github.com/go-logr/logr"

	"github.com/dynalease/dynalease/internal/timing"
)

// Config holds what the engine needs to know of the lease and its caller.
// The caller validates it against the lease.
type Config struct {
	// Clock times every request and validity.
	Clock timing.Clock
	// Identity is the holder identity written into the caller's records.
	Identity string
	// RequestTimeout bounds each request, the SDK's retries included. The
	// engine applies it, once; the store adds nothing to a context with a
	// deadline.
	RequestTimeout time.Duration
	// Validity is how long after the send of its last confirmed write a
	// holder counts the lease as its own.
	Validity time.Duration
	// Log receives the engine's debug lines.
	Log logr.Logger
	// Observe, when set, is told of every request the engine sends: op
	// ("get", "create", "update", "remove", "fence", "join" or "leave"),
	// its error and its latency.
	Observe func(op string, err error, d time.Duration)
	// Epoch is the time of the clock from which a hold keeps its send
	// time, as a Duration (see Hold.Sent); the Kernel sets it.
	Epoch time.Time
	// Waits are this identity's queued waits under way, so that its own
	// entries in a queue are told apart by ticket; the Kernel sets it
	// (nil: every entry of the identity but a wait's own is stale).
	Waits *Waits
}

// observe reports one request to cfg.Observe.
func (cfg *Config) observe(op string, start time.Time, err error) {
	if cfg.Observe != nil {
		cfg.Observe(op, err, cfg.Clock.Since(start))
	}
}
