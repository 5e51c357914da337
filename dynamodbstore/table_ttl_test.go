package dynamodbstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/resourcelock"
)

// wantTTL checks that table has TTL enabled on attr.
func wantTTL(t *testing.T, c *dynamodb.Client, table, attr string) {
	t.Helper()
	out, err := c.DescribeTimeToLive(testCtx(t), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive %s: %v", table, err)
	}
	d := out.TimeToLiveDescription
	if d == nil || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != attr {
		t.Fatalf("table %s has TTL %+v, want it enabled on %q", table, d, attr)
	}
}

func TestCreateTableTTL(t *testing.T) {
	t.Parallel()
	c := ddbtest.Client(t)
	ft := faulthttp.New(nil)
	t.Cleanup(ft.CloseIdleConnections)
	counted := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = ft })

	t.Run("new table", func(t *testing.T) {
		table := tableName(t, c)
		opts := dynamodbstore.TableOptions{TTLAttribute: "ttl", PollInterval: 10 * time.Millisecond}
		if err := dynamodbstore.CreateTable(testCtx(t), c, table, opts); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		wantTTL(t, c, table, "ttl")

		// Again: TTL is on already, so it is not asked for (DynamoDB
		// would refuse it).
		ft.Reset()
		if err := dynamodbstore.CreateTable(testCtx(t), counted, table, opts); err != nil {
			t.Fatalf("CreateTable again: %v", err)
		}
		if n := ft.Count("UpdateTimeToLive"); n != 0 {
			t.Errorf("CreateTable on a table with TTL on its attribute sent %d UpdateTimeToLive, want none", n)
		}

		// TTL on another attribute is a mismatch; nothing changes.
		other := opts
		other.TTLAttribute = "expiresAt"
		err := dynamodbstore.CreateTable(testCtx(t), c, table, other)
		if !errors.Is(err, resourcelock.ErrPermanent) || !strings.Contains(err.Error(), `"ttl"`) ||
			!strings.Contains(err.Error(), `"expiresAt"`) || !strings.Contains(err.Error(), table) {
			t.Errorf("CreateTable with TTL on expiresAt over TTL on ttl: %v, want a permanent mismatch naming both and the table", err)
		}
		wantTTL(t, c, table, "ttl")

		// Without TTLAttribute the TTL setting is left alone.
		ft.Reset()
		if err := dynamodbstore.CreateTable(testCtx(t), counted, table, dynamodbstore.TableOptions{}); err != nil {
			t.Fatalf("CreateTable without TTLAttribute: %v", err)
		}
		if n := ft.Count("DescribeTimeToLive") + ft.Count("UpdateTimeToLive"); n != 0 {
			t.Errorf("CreateTable without TTLAttribute sent %d TTL requests", n)
		}
		wantTTL(t, c, table, "ttl")
	})

	t.Run("existing table", func(t *testing.T) {
		spec := ddbtest.TableSpec{PartitionKey: "lockGroup", SortKey: "lockName"}
		table := ddbtest.NewTable(t, c, spec)
		opts := dynamodbstore.TableOptions{PartitionKeyAttribute: "lockGroup", SortKeyAttribute: "lockName", TTLAttribute: "expiresAt"}
		if err := dynamodbstore.CreateTable(testCtx(t), c, table, opts); err != nil {
			t.Fatalf("CreateTable on an existing table without TTL: %v", err)
		}
		wantTTL(t, c, table, "expiresAt")

		// A key mismatch is found before TTL is looked at.
		ft.Reset()
		err := dynamodbstore.CreateTable(testCtx(t), counted, table, dynamodbstore.TableOptions{TTLAttribute: "expiresAt"})
		if !errors.Is(err, resourcelock.ErrPermanent) {
			t.Fatalf("CreateTable with another key: %v, want a permanent mismatch", err)
		}
		if n := ft.Count("DescribeTimeToLive") + ft.Count("UpdateTimeToLive"); n != 0 {
			t.Errorf("CreateTable with a key mismatch sent %d TTL requests", n)
		}
	})
}

// Runs without DynamoDB.
func TestCreateTableTTLInvalidOptions(t *testing.T) {
	fake := &fakeTables{}
	for what, opts := range map[string]dynamodbstore.TableOptions{
		"reserved TTL attribute ownerName":     {TTLAttribute: "ownerName"},
		"reserved TTL attribute leaseDuration": {TTLAttribute: "leaseDuration"},
		"TTL on the partition key":             {TTLAttribute: "key"},
		"TTL on a custom partition key":        {PartitionKeyAttribute: "pk", TTLAttribute: "pk"},
		"TTL on the sort key":                  {SortKeyAttribute: "sk", TTLAttribute: "sk"},
	} {
		err := dynamodbstore.CreateTable(context.Background(), fake, "t", opts)
		if !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("CreateTable with %s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
	c, d := fake.counts()
	dt, ut := fake.ttlCounts()
	if c+d+dt+ut != 0 {
		t.Fatalf("invalid options sent %d requests, want none", c+d+dt+ut)
	}
}

// Runs without DynamoDB: the TTL steps on scripted answers.
func TestCreateTableTTLSteps(t *testing.T) {
	ctx := testCtx(t)
	active := []describeAnswer{{status: types.TableStatusActive}}
	boom := errors.New("boom")
	enabled := func(attr string) ttlAnswer { return ttlAnswer{status: types.TimeToLiveStatusEnabled, attr: attr} }
	for _, tc := range []struct {
		name      string
		fake      *fakeTables
		wantErr   error // nil: success
		updates   int
		describes int
		mention   []string // in the error's text
	}{
		{
			name:    "new table: enabled once ACTIVE",
			fake:    &fakeTables{describes: []describeAnswer{{}, {status: types.TableStatusCreating}, {status: types.TableStatusActive}}},
			updates: 1, describes: 1,
		},
		{
			name:    "disabled",
			fake:    &fakeTables{describes: active, ttls: []ttlAnswer{{status: types.TimeToLiveStatusDisabled}}},
			updates: 1, describes: 1,
		},
		{
			name:    "no description",
			fake:    &fakeTables{describes: active, ttls: []ttlAnswer{{}}},
			updates: 1, describes: 1,
		},
		{
			name:    "enabled on the attribute",
			fake:    &fakeTables{describes: active, ttls: []ttlAnswer{enabled("ttl")}},
			updates: 0, describes: 1,
		},
		{
			name:    "being enabled on the attribute",
			fake:    &fakeTables{describes: active, ttls: []ttlAnswer{{status: types.TimeToLiveStatusEnabling, attr: "ttl"}}},
			updates: 0, describes: 1,
		},
		{
			name:    "enabled on another attribute",
			fake:    &fakeTables{describes: active, ttls: []ttlAnswer{enabled("expiresAt")}},
			wantErr: resourcelock.ErrPermanent, updates: 0, describes: 1,
			mention: []string{`"ttl"`, `"expiresAt"`, `"t"`},
		},
		{
			name:    "being enabled on another attribute",
			fake:    &fakeTables{describes: active, ttls: []ttlAnswer{{status: types.TimeToLiveStatusEnabling, attr: "expiresAt"}}},
			wantErr: resourcelock.ErrPermanent, updates: 0, describes: 1,
			mention: []string{`"ttl"`, `"expiresAt"`},
		},
		{
			name: "enabled meanwhile by someone else",
			fake: &fakeTables{describes: active, updateTTLErr: boom,
				ttls: []ttlAnswer{{status: types.TimeToLiveStatusDisabled}, enabled("ttl")}},
			updates: 1, describes: 2,
		},
		{
			name: "enabled meanwhile by someone else on another attribute",
			fake: &fakeTables{describes: active, updateTTLErr: boom,
				ttls: []ttlAnswer{{status: types.TimeToLiveStatusDisabled}, enabled("expiresAt")}},
			wantErr: resourcelock.ErrPermanent, updates: 1, describes: 2,
		},
		{
			name:    "update fails",
			fake:    &fakeTables{describes: active, updateTTLErr: boom},
			wantErr: boom, updates: 1, describes: 2,
			mention: []string{`"ttl"`, `"t"`},
		},
		{
			name:    "update fails and so does the second describe",
			fake:    &fakeTables{describes: active, updateTTLErr: boom, ttls: []ttlAnswer{{status: types.TimeToLiveStatusDisabled}, {err: errors.New("other")}}},
			wantErr: boom, updates: 1, describes: 2,
		},
		{
			name:    "describe fails",
			fake:    &fakeTables{describes: active, ttls: []ttlAnswer{{err: boom}}},
			wantErr: boom, updates: 0, describes: 1,
		},
		{
			name:    "table gone",
			fake:    &fakeTables{describes: active, ttls: []ttlAnswer{{err: &types.ResourceNotFoundException{Message: aws.String("gone")}}}},
			wantErr: resourcelock.ErrPermanent, updates: 0, describes: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := dynamodbstore.TableOptions{TTLAttribute: "ttl", PollInterval: time.Millisecond}
			err := dynamodbstore.CreateTable(ctx, tc.fake, "t", opts)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("CreateTable: %v", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("CreateTable: %v, want %v", err, tc.wantErr)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %s", err, m)
				}
			}
			describes, updates := tc.fake.ttlCounts()
			if describes != tc.describes || updates != tc.updates {
				t.Errorf("%d DescribeTimeToLive and %d UpdateTimeToLive requests, want %d and %d",
					describes, updates, tc.describes, tc.updates)
			}
			if !tc.fake.activeAtTTL {
				t.Errorf("TTL was looked at before the table was ACTIVE")
			}
			for _, in := range tc.fake.updateTTLs {
				spec := in.TimeToLiveSpecification
				if aws.ToString(in.TableName) != "t" || spec == nil || aws.ToString(spec.AttributeName) != "ttl" || !aws.ToBool(spec.Enabled) {
					t.Errorf("UpdateTimeToLive input %+v, want TTL enabled on ttl of t", in)
				}
			}
		})
	}

	t.Run("no TTLAttribute", func(t *testing.T) {
		fake := &fakeTables{describes: active, ttls: []ttlAnswer{enabled("other")}}
		if err := dynamodbstore.CreateTable(ctx, fake, "t", dynamodbstore.TableOptions{}); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		if d, u := fake.ttlCounts(); d+u != 0 {
			t.Fatalf("CreateTable without TTLAttribute sent %d TTL requests", d+u)
		}
	})
}
