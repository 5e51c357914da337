package prommetrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/election"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/metrics/prommetrics"
)

// value returns the value of the metric family name with labels, from the
// registry as a scrape would see it; -1 when there is no such series.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

func want(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string, v float64) {
	t.Helper()
	if got := value(t, reg, name, labels); got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

// stealRow writes another owner's row over key, as an AWS Java client's
// takeover would.
func stealRow(t *testing.T, c *dynamodb.Client, table, key string) {
	t.Helper()
	if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			dynamodbstore.DefaultPartitionKeyAttribute: &types.AttributeValueMemberS{Value: key},
			"ownerName":           &types.AttributeValueMemberS{Value: "java-host"},
			"recordVersionNumber": &types.AttributeValueMemberS{Value: "stolen"},
			"leaseDuration":       &types.AttributeValueMemberS{Value: "60000"},
		},
	}); err != nil {
		t.Fatal(err)
	}
}

// The lock client's metrics after scripted scenarios: an acquisition, a
// throttled heartbeat, a stolen lock.
func TestDynamoDBLockMetrics(t *testing.T) {
	t.Parallel()
	raw := ddbtest.Client(t)
	table := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	ft := faulthttp.New(nil)
	t.Cleanup(ft.CloseIdleConnections)
	// One SDK attempt per request, so an injected throttle is the answer.
	client := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = ft; o.RetryMaxAttempts = 1 })
	reg := prometheus.NewRegistry()
	m, err := prommetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	c, err := lock.New(lock.Config{Store: store, Metrics: m.Locks("orders"), ManualHeartbeats: true, LeaseDuration: time.Minute, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	client1 := map[string]string{"client": "orders", "kind": "lock"}
	req := func(op, outcome string) map[string]string {
		return map[string]string{"scope": "lock", "name": "orders", "operation": op, "outcome": outcome}
	}

	l, err := c.Acquire(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	want(t, reg, "dynalease_lock_held", client1, 1)
	want(t, reg, "dynalease_lock_acquisitions_total", client1, 1)
	want(t, reg, "dynalease_lock_acquire_wait_seconds", client1, 1)
	want(t, reg, "dynalease_requests_total", req("create", "ok"), 1)

	// A throttled heartbeat: counted by outcome, and the client is failing.
	ft.Add(faulthttp.Rule{Op: "UpdateItem", Times: 1, Fault: faulthttp.Throttling()})
	if err := l.Heartbeat(t.Context()); err == nil {
		t.Fatal("a throttled heartbeat succeeded")
	}
	want(t, reg, "dynalease_requests_total", req("update", "throttled"), 1)
	want(t, reg, "dynalease_lock_heartbeats_total", map[string]string{"client": "orders", "outcome": "error"}, 1)
	want(t, reg, "dynalease_failing", map[string]string{"scope": "lock", "name": "orders"}, 1)
	if since := value(t, reg, "dynalease_failing_since_timestamp_seconds", map[string]string{"scope": "lock", "name": "orders"}); since <= 0 {
		t.Errorf("failing since %v, want a Unix time", since)
	}
	if err := l.Heartbeat(t.Context()); err != nil {
		t.Fatal(err)
	}
	want(t, reg, "dynalease_failing", map[string]string{"scope": "lock", "name": "orders"}, 0)
	want(t, reg, "dynalease_lock_heartbeats_total", map[string]string{"client": "orders", "outcome": "ok"}, 1)

	// A stolen lock: one refused renewal, and the loss by reason.
	stealRow(t, raw, table, "k")
	if err := l.Heartbeat(t.Context()); !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Heartbeat of a stolen lock = %v", err)
	}
	want(t, reg, "dynalease_lock_lost_total", map[string]string{"client": "orders", "kind": "lock", "reason": "stolen"}, 1)
	want(t, reg, "dynalease_lock_held", client1, 0)
	want(t, reg, "dynalease_requests_total", req("update", "condition_failed"), 1)
	want(t, reg, "dynalease_lock_heartbeats_total", map[string]string{"client": "orders", "outcome": "lost"}, 1)

	// A release returns the held count to where it was.
	l2, err := c.Acquire(t.Context(), "k2")
	if err != nil {
		t.Fatal(err)
	}
	want(t, reg, "dynalease_lock_held", client1, 1)
	if err := l2.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	want(t, reg, "dynalease_lock_held", client1, 0)

	// Sets and permits are counted by kind: permits in use are the held
	// permits.
	set, err := c.AcquireSet(t.Context(), []string{"s1", "s2"})
	if err != nil {
		t.Fatal(err)
	}
	permit, err := c.AcquirePermit(t.Context(), "pay", 2)
	if err != nil {
		t.Fatal(err)
	}
	ofKind := func(kind string) map[string]string { return map[string]string{"client": "orders", "kind": kind} }
	want(t, reg, "dynalease_lock_held", ofKind("set"), 1)
	want(t, reg, "dynalease_lock_held", ofKind("permit"), 1)
	want(t, reg, "dynalease_lock_acquisitions_total", ofKind("set"), 1)
	want(t, reg, "dynalease_lock_acquisitions_total", ofKind("permit"), 1)
	want(t, reg, "dynalease_lock_held", client1, 0)
	stealRow(t, raw, table, "s2")
	if err := set.Heartbeat(t.Context()); !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Heartbeat of a set with a stolen key = %v", err)
	}
	want(t, reg, "dynalease_lock_lost_total", map[string]string{"client": "orders", "kind": "set", "reason": "stolen"}, 1)
	want(t, reg, "dynalease_lock_held", ofKind("set"), 0)
	if err := permit.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	want(t, reg, "dynalease_lock_held", ofKind("permit"), 0)
}

// An elector's metrics over a term and its loss to another owner.
func TestDynamoDBElectionMetrics(t *testing.T) {
	t.Parallel()
	raw := ddbtest.Client(t)
	table := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	reg := prometheus.NewRegistry()
	m, err := prommetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: raw, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	started, stopped := make(chan struct{}, 1), make(chan struct{}, 1)
	e, err := election.New(election.Config{
		Store:         store,
		Name:          "leader",
		Identity:      "a",
		Metrics:       m.Election("scheduler"),
		LeaseDuration: 20 * time.Second,
		RenewDeadline: 15 * time.Second,
		RetryPeriod:   100 * time.Millisecond,
		// Room for a loaded machine: a renewal that timed out would be
		// settled by a read and counted a timeout, not a refusal.
		RequestTimeout: 5 * time.Second,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context) { started <- struct{}{}; <-ctx.Done() },
			OnStoppedLeading: func() { stopped <- struct{}{} },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	<-started
	name := map[string]string{"election": "scheduler"}
	want(t, reg, "dynalease_election_leader", name, 1)
	if left := value(t, reg, "dynalease_election_term_remaining_seconds", name); left <= 0 || left > 15 {
		t.Errorf("term remaining %v s, want within the renew deadline", left)
	}
	want(t, reg, "dynalease_election_rounds_total", map[string]string{"election": "scheduler", "outcome": "ok"}, 1)
	want(t, reg, "dynalease_election_leader_changes_total", name, 1)

	stealRow(t, raw, table, "leader")
	<-stopped
	if err := <-done; !errors.Is(err, dynalease.ErrLost) {
		t.Fatalf("Run = %v, want dynalease.ErrLost", err)
	}
	want(t, reg, "dynalease_election_leader", name, 0)
	want(t, reg, "dynalease_election_term_remaining_seconds", name, 0)
	want(t, reg, "dynalease_election_renewals_total", map[string]string{"election": "scheduler", "outcome": "lost"}, 1)
	if n := value(t, reg, "dynalease_requests_total", map[string]string{"scope": "election", "name": "scheduler", "operation": "update", "outcome": "condition_failed"}); n != 1 {
		t.Errorf("refused renewals counted %v, want 1", n)
	}
}
