package election

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr/funcr"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

func validConfig() Config {
	return Config{
		Lease: mustLease(rows.MustOpen(memorystore.New()), "x", "a"),
		Callbacks: Callbacks{
			OnStartedLeading: func(context.Context) {},
			OnStoppedLeading: func() {},
		},
	}
}

type emptyIdentity struct{ resourcelock.Interface }

func (emptyIdentity) Identity() string { return "" }

func TestConfigDefaults(t *testing.T) {
	e, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := e.cfg
	if c.LeaseDuration != 15*time.Second || c.RenewDeadline != 10*time.Second || c.RetryPeriod != 2*time.Second || c.RequestTimeout != 2*time.Second {
		t.Fatalf("defaults = %v/%v/%v/%v", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod, c.RequestTimeout)
	}
}

func TestConfigValidationNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		field  string
		change func(*Config)
	}{
		{"Store", func(c *Config) { c.Lease = nil }},
		{"Lease", func(c *Config) { c.Lease = emptyIdentity{c.Lease} }},
		{"Lease", func(c *Config) { c.Store = memorystore.New() }},
		{"Name", func(c *Config) { c.Lease, c.Store, c.Identity = nil, memorystore.New(), "a" }},
		{"Name", func(c *Config) {
			c.Lease, c.Store, c.Identity, c.Name = nil, memorystore.New(), "a", strings.Repeat("n", 2049)
		}},
		{"Identity", func(c *Config) { c.Lease, c.Store, c.Name = nil, memorystore.New(), "leader" }},
		{"Identity", func(c *Config) {
			c.Lease, c.Store, c.Name, c.Identity = nil, memorystore.New(), "leader", strings.Repeat("i", 1025)
		}},
		{"Identity", func(c *Config) { c.Identity = "a" }},
		{"LeaseDuration", func(c *Config) { c.LeaseDuration = -time.Second }},
		{"RenewDeadline", func(c *Config) { c.RenewDeadline = -time.Second }},
		{"RetryPeriod", func(c *Config) { c.RetryPeriod = -time.Second }},
		{"RenewDeadline", func(c *Config) { c.RenewDeadline, c.RetryPeriod = 12*time.Second, 10*time.Second }},
		{"LeaseDuration", func(c *Config) { c.LeaseDuration = 10 * time.Second }},
		{"LeaseDuration", func(c *Config) { c.LeaseDuration = 10*time.Second + 99*time.Millisecond }},
		{"RequestTimeout", func(c *Config) { c.RequestTimeout = -time.Second }},
		{"RetryPeriod", func(c *Config) { c.RetryPeriod = time.Nanosecond }},               // bug 11: a busy loop
		{"RetryPeriod", func(c *Config) { c.RetryPeriod = 10*time.Millisecond - 1 }},       // the floor
		{"RequestTimeout", func(c *Config) { c.RequestTimeout = 10*time.Millisecond - 1 }}, // the floor
		{"Fencing", func(c *Config) { c.Fencing = true; c.Lease = noFenceTable{c.Lease} }}, // bug 2
		{"RequestTimeout", func(c *Config) { c.RequestTimeout = 8*time.Second + 1 }},
		{"Callbacks.OnStartedLeading", func(c *Config) { c.Callbacks.OnStartedLeading = nil }},
		{"Callbacks.OnStoppedLeading", func(c *Config) { c.Callbacks.OnStoppedLeading = nil }},
	} {
		cfg := validConfig()
		tc.change(&cfg)
		_, err := New(cfg)
		var ce *dynalease.InvalidError
		if !errors.Is(err, dynalease.ErrInvalid) || !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: New = %v, want an InvalidError for %s", tc.field, err, tc.field)
		}
	}
}

func TestConfigBoundariesAccepted(t *testing.T) {
	cfg := validConfig()
	cfg.LeaseDuration = 10*time.Second + 100*time.Millisecond // 1% of RenewDeadline
	cfg.RequestTimeout = 8 * time.Second
	if _, err := New(cfg); err != nil {
		t.Fatalf("New at the limits: %v", err)
	}
	cfg = validConfig()
	cfg.RenewDeadline, cfg.RetryPeriod, cfg.LeaseDuration = 2401*time.Millisecond, 2*time.Second, 3*time.Second
	if _, err := New(cfg); err != nil {
		t.Fatalf("New with RenewDeadline just above 1.2 × RetryPeriod: %v", err)
	}
}

func TestSmallLeaseMarginIsAWarning(t *testing.T) {
	var logged []string
	cfg := validConfig()
	cfg.LeaseDuration = 11 * time.Second // margin 1 s < RetryPeriod 2 s
	cfg.Logger = funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "warning") {
		t.Fatalf("logged %q, want one warning", logged)
	}
}

// noFenceTable is a lock that implements Fencer but has no fence table, as
// a keylease.Lease configured without FenceTable.
type noFenceTable struct{ resourcelock.Interface }

func (noFenceTable) Fence(context.Context, string) (resourcelock.Record, error) {
	return resourcelock.Record{}, dynalease.ErrInvalid
}
func (noFenceTable) CanFence() bool { return false }

// Bug 2 of the engine issue: Fencing with a DynamoDB lock that has no fence
// table is refused by New, instead of a candidate that renews for ever and
// never leads. No request is sent.
func TestFencingWithoutAFenceTableIsRefused(t *testing.T) {
	store, err := dynamodbstore.New(dynamodbstore.Config{
		Client: dynamodb.New(dynamodb.Options{Region: "us-east-1"}),
		Table:  "locks",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := validConfig()
	cfg.Lease, cfg.Fencing = nil, true
	cfg.Store, cfg.Name, cfg.Identity = store, "leader", "a"
	var ce *dynalease.InvalidError
	if _, err := New(cfg); !errors.As(err, &ce) || ce.Field != "Fencing" {
		t.Fatalf("New = %v, want an InvalidError for Fencing", err)
	}
}
