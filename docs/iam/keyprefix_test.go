package iam_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/lock"
)

// leadingKeys returns the partition key values a request names, as IAM's
// dynamodb:LeadingKeys sees them, per table; ok is false for a request
// that names none (a Scan), which a ForAllValues condition would let
// through on any key, so the policy must not allow it.
func leadingKeys(params any) (map[string][]string, bool) {
	keyOf := func(table *string, key map[string]types.AttributeValue) map[string][]string {
		v, _ := key["key"].(*types.AttributeValueMemberS)
		if v == nil {
			return nil
		}
		return map[string][]string{aws.ToString(table): {v.Value}}
	}
	switch p := params.(type) {
	case *dynamodb.GetItemInput:
		return keyOf(p.TableName, p.Key), true
	case *dynamodb.UpdateItemInput:
		return keyOf(p.TableName, p.Key), true
	case *dynamodb.DeleteItemInput:
		return keyOf(p.TableName, p.Key), true
	case *dynamodb.QueryInput:
		out := map[string][]string{}
		for _, v := range p.ExpressionAttributeValues {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				out[aws.ToString(p.TableName)] = append(out[aws.ToString(p.TableName)], s.Value)
			}
		}
		return out, true
	case *dynamodb.TransactWriteItemsInput:
		out := map[string][]string{}
		for _, it := range p.TransactItems {
			if c := it.ConditionCheck; c != nil {
				for tb, ks := range keyOf(c.TableName, c.Key) {
					out[tb] = append(out[tb], ks...)
				}
			}
		}
		return out, true
	}
	return nil, false
}

// stringLike matches s against an IAM StringLike pattern (* and ?).
func stringLike(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if stringLike(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && stringLike(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && stringLike(pattern[1:], s[1:])
}

// leadingKeyPatterns returns, per table parameter of the policy file, the
// dynamodb:LeadingKeys patterns of its ForAllValues:StringLike condition,
// with the parameters replaced.
func leadingKeyPatterns(t *testing.T, file string, params map[string]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, st := range readPolicy(t, file) {
		var res string
		if err := json.Unmarshal(st.Resource, &res); err != nil {
			t.Fatalf("%s: Resource: %v", file, err)
		}
		m := tableParam.FindStringSubmatch(res)
		if m == nil {
			t.Fatalf("%s: resource %q", file, res)
		}
		for _, p := range st.Condition["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] {
			for name, value := range params {
				p = strings.ReplaceAll(p, "${"+name+"}", value)
			}
			out[m[1]] = append(out[m[1]], p)
		}
	}
	return out
}

// A service confined to the keys under its prefix (dynamodb:LeadingKeys)
// can do everything its lock client does there: acquire (with fencing),
// heartbeat, poll a held lock, guarded writes, release and delete, Get and
// List of one partition. Every key it sends matches the policy's
// condition, and the policy allows no action without a leading key (a
// Scan: List of the whole table).
func TestDynamoDBKeyPrefixPolicy(t *testing.T) {
	t.Parallel()
	const prefix = "billing/"
	r := &recorder{seen: map[string]bool{}}
	raw := ddbtest.Client(t)
	table := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	fences := ddbtest.NewTable(t, raw, ddbtest.TableSpec{})
	app := ddbtest.NewTable(t, raw, ddbtest.TableSpec{PartitionKey: "id"})
	var keys []map[string][]string
	var keyless []string
	c := ddbtest.Client(t, r.option, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, keyRecorder(func(op string, params any) {
			ks, ok := leadingKeys(params)
			// DescribeTable (the table check) reads the table's
			// description, no item: the policy's statement for it has
			// no key condition, and needs none.
			if !ok && op != "DescribeTable" {
				keyless = append(keyless, op)
			}
			keys = append(keys, ks)
		}))
	})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table, FenceTable: fences})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := lock.New(lock.Config{Store: store, Fencing: true, ManualHeartbeats: true, LeaseDuration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rawStore, err := dynamodbstore.New(dynamodbstore.Config{Client: raw, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	other, err := lock.New(lock.Config{Store: rawStore, ManualHeartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	held, err := other.Acquire(ctx, prefix+"held")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.TryAcquire(ctx, prefix+"held"); err == nil {
		t.Fatal("TryAcquire of a held lock succeeded")
	}
	_ = held.Release(ctx)
	l, err := lc.Acquire(ctx, prefix+"invoice-7")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Guard(ctx, store.Writes(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(app), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: "invoice-7"}}}})); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, lock.ReleaseDelete(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Get(ctx, prefix+"held"); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.List(ctx, prefix+"held"); err != nil {
		t.Fatal(err)
	}
	params := map[string]string{table: "LockTable", fences: "FenceTable", app: "AppTable"}
	check(t, "key-prefix.json", r, params)
	if len(keyless) > 0 {
		t.Errorf("requests without a leading key, which the prefix cannot confine: %v", keyless)
	}
	patterns := leadingKeyPatterns(t, "key-prefix.json", map[string]string{"KeyPrefix": prefix})
	for _, req := range keys {
		for tb, ks := range req {
			pats, scoped := patterns[params[tb]]
			if !scoped {
				continue // the application's table
			}
			for _, k := range ks {
				ok := false
				for _, p := range pats {
					ok = ok || stringLike(p, k)
				}
				if !ok {
					t.Errorf("key %q on %s matches none of the policy's patterns %v", k, params[tb], pats)
				}
			}
		}
	}
	for _, p := range patterns["LockTable"] {
		if stringLike(p, "payroll/x") {
			t.Errorf("pattern %q lets another service's key through", p)
		}
	}
}
