package lock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
)

// The benchmarks below measure the client's own cost of an
// acquire+release cycle through the real AWS SDK client, with an HTTP
// transport that answers in process (echoTransport), beside the raw SDK's
// conditional PutItem + DeleteItem through the same transport. They leave
// out the network and the server, so their ratio is the client's CPU and
// allocations alone; make bench gives the same ratio against DynamoDB
// Local.

// echoTransport answers DynamoDB requests in process: an UpdateItem with
// the item its SET and ADD clauses describe (the row as created), every
// other request with an empty object. It checks no condition.
type echoTransport struct{}

type echoRequest struct {
	Key                       map[string]json.RawMessage
	UpdateExpression          string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]json.RawMessage
	ReturnValues              string
}

func (echoTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	out := []byte("{}")
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".UpdateItem") {
		if out, err = echoUpdate(body); err != nil {
			return nil, err
		}
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(bytes.NewReader(out)),
		ContentLength: int64(len(out)),
		Request:       req,
	}, nil
}

// echoUpdate returns the answer to an UpdateItem: its key and the
// attributes its SET clauses set and its ADD clauses add to nothing.
func echoUpdate(body []byte) ([]byte, error) {
	var in echoRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	if in.ReturnValues != "ALL_NEW" {
		return []byte("{}"), nil
	}
	attrs := map[string]json.RawMessage{}
	for k, v := range in.Key {
		attrs[k] = v
	}
	name := func(ref string) string {
		if strings.HasPrefix(ref, "#") {
			return in.ExpressionAttributeNames[ref]
		}
		return ref
	}
	set, rest, _ := strings.Cut(strings.TrimPrefix(in.UpdateExpression, "SET "), " REMOVE ")
	if _, add, ok := strings.Cut(in.UpdateExpression, " ADD "); ok {
		attrs[name(strings.Fields(add)[0])] = json.RawMessage(`{"N":"1"}`)
	}
	_ = rest
	for _, p := range strings.Split(set, ",") {
		if n, v, ok := strings.Cut(strings.TrimSpace(p), " = "); ok {
			attrs[name(n)] = in.ExpressionAttributeValues[strings.Fields(v)[0]]
		}
	}
	for k, v := range attrs {
		if v == nil {
			return nil, fmt.Errorf("echo: no value for %s in %q", k, in.UpdateExpression)
		}
	}
	return json.Marshal(map[string]any{"Attributes": attrs})
}

func echoClient() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials:  credentials.NewStaticCredentialsProvider("bench", "bench", ""),
		HTTPClient:   &http.Client{Transport: echoTransport{}},
	}, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
}

// BenchmarkSDKCycleRaw is the raw SDK's cycle: a conditional PutItem and a
// conditional DeleteItem of an item shaped like a lock's.
func BenchmarkSDKCycleRaw(b *testing.B) {
	c := echoClient()
	ctx := context.Background()
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		key, rvn := fmt.Sprintf("raw-%d", i), uuid.NewString()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                aws.String("locks"),
			Item:                     map[string]types.AttributeValue{"key": str(key), "ownerName": str("bench-raw"), "recordVersionNumber": str(rvn), "leaseDuration": str("20000")},
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": "key"},
		}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 aws.String("locks"),
			Key:                       map[string]types.AttributeValue{"key": str(key)},
			ConditionExpression:       aws.String("#r = :r"),
			ExpressionAttributeNames:  map[string]string{"#r": "recordVersionNumber"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": str(rvn)},
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSDKCycleLock is the lock's cycle through the same client:
// Acquire and Release of a fresh key, the row kept.
func BenchmarkSDKCycleLock(b *testing.B) {
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: echoClient(), Table: "locks", SkipTableCheck: true})
	if err != nil {
		b.Fatal(err)
	}
	c, err := lock.New(lock.Config{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		l, err := c.Acquire(ctx, fmt.Sprintf("lk-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSDKCycleEcho is echoTransport's own cost in a lock cycle (two
// UpdateItem answers), which BenchmarkSDKCycleLock includes and the raw
// cycle does not: subtract it to compare the two.
func BenchmarkSDKCycleEcho(b *testing.B) {
	body := []byte(`{"ExpressionAttributeNames":{"#n0":"data"},"ExpressionAttributeValues":{":v0":{"S":"a030c87b-388f-4e8d-9ec4-ca2777abd4ee"},":v1":{"S":"vm-965f1867-78aa-4684-a6b3-bdda29d659dc"},":v2":{"S":"20000"},":v3":{"S":"a030c87b-388f-4e8d-9ec4-ca2777abd4ee"},":v4":{"S":"2026-11-26T18:54:51.969Z"},":v5":{"S":"2026-11-26T18:54:51.969Z"},":v6":{"N":"1"}},"Key":{"key":{"S":"k1"}},"ReturnValues":"ALL_NEW","UpdateExpression":"SET acquisitionId = :v0, ownerName = :v1, leaseDuration = :v2, recordVersionNumber = :v3, acquireTime = :v4, renewTime = :v5 REMOVE #n0, dynaleaseHandoff, isReleased ADD leaderTransitions :v6"}`)
	b.ReportAllocs()
	for b.Loop() {
		for range 2 {
			if _, err := echoUpdate(body); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSDKCycleLockRequests sends the lock cycle's two requests, as
// the DynamoDB store builds them (an acquiring UpdateItem and a releasing
// one, both answered with the row), through the SDK alone: the SDK's
// share of BenchmarkSDKCycleLock, echo included.
func BenchmarkSDKCycleLockRequests(b *testing.B) {
	c := echoClient()
	ctx := context.Background()
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	num := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	const owner, now = "vm-965f1867-78aa-4684-a6b3-bdda29d659dc", "2026-11-26T18:54:51.969Z"
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		key := map[string]types.AttributeValue{"key": str(fmt.Sprintf("lk-%d", i))}
		rvn, next := uuid.NewString(), uuid.NewString()
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                aws.String("locks"),
			Key:                      key,
			UpdateExpression:         aws.String("SET acquisitionId = :v0, ownerName = :v1, leaseDuration = :v2, recordVersionNumber = :v3, acquireTime = :v4, renewTime = :v5 REMOVE #n0, dynaleaseHandoff, isReleased ADD leaderTransitions :v6"),
			ConditionExpression:      aws.String("attribute_not_exists(#n1) OR (isReleased = :v7 AND (attribute_not_exists(dynaleaseQueue) OR size(dynaleaseQueue) = :v8))"),
			ExpressionAttributeNames: map[string]string{"#n0": "data", "#n1": "key"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v0": str(rvn), ":v1": str(owner), ":v2": str("20000"), ":v3": str(rvn),
				":v4": str(now), ":v5": str(now), ":v6": num("1"), ":v7": str("1"), ":v8": num("0")},
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                aws.String("locks"),
			Key:                      key,
			UpdateExpression:         aws.String("SET ownerName = :v0, leaseDuration = :v1, recordVersionNumber = :v2, isReleased = :v3, acquireTime = :v4, renewTime = :v5 REMOVE #n0, dynaleaseHandoff"),
			ConditionExpression:      aws.String("(attribute_exists(#n1) AND recordVersionNumber = :v6 AND ownerName = :v7 AND NOT isReleased = :v8) AND (attribute_not_exists(dynaleaseQueue) OR size(dynaleaseQueue) = :v9)"),
			ExpressionAttributeNames: map[string]string{"#n0": "data", "#n1": "key"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v0": str(owner), ":v1": str("20000"), ":v2": str(next), ":v3": str("1"),
				":v4": str(now), ":v5": str(now), ":v6": str(rvn), ":v7": str(owner), ":v8": str("1"), ":v9": num("0")},
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}); err != nil {
			b.Fatal(err)
		}
	}
}
