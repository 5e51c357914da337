package dynamodbstore

import (
	"context"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// Microbenchmarks of the item codec and of the store's request paths
// without a network (make bench runs them and reports ns/op, B/op and
// allocs/op).

var (
	benchKeys = keySchema{partitionKey: DefaultPartitionKeyAttribute, ttl: DefaultTTLAttribute}
	benchTime = time.Date(2026, 11, 21, 12, 30, 45, 123_000_000, time.UTC)
	benchRec  = resourcelock.Record{
		HolderIdentity:  "host-a.example-5f0c9a2e-3d1b-4c55-9d7e-0a1b2c3d4e5f",
		RVN:             "0c6f4f1e-7a7b-4d0e-9a55-3b7e2f1d9c8a",
		LeaseDuration:   20 * time.Second,
		Acquisitions:    7,
		FenceGeneration: 2,
		AcquisitionID:   "6e2d5c1b-0a9f-4e8d-b7c6-5a4f3e2d1c0b",
		AcquireTime:     benchTime,
		RenewTime:       benchTime.Add(5 * time.Second),
		Data:            []byte("rebalancing customer 42"),
	}
)

// benchItem returns the item a lock table holds for benchRec under name.
func benchItem(name string) map[string]types.AttributeValue {
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	num := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	return map[string]types.AttributeValue{
		DefaultPartitionKeyAttribute: str(name),
		attrOwner:                    str(benchRec.HolderIdentity),
		attrLease:                    str("20000"),
		attrRVN:                      str(benchRec.RVN),
		attrData:                     &types.AttributeValueMemberB{Value: benchRec.Data},
		attrTransitions:              num("7"),
		attrGeneration:               num("2"),
		attrAcquisition:              str(benchRec.AcquisitionID),
		attrAcquireTime:              str(benchRec.AcquireTime.Format(timeLayout)),
		attrRenewTime:                str(benchRec.RenewTime.Format(timeLayout)),
	}
}

// BenchmarkCodecEncodeRenewal builds a holder's renewal: the update
// expression with every attribute set or removed, and the owner-and-RVN
// condition.
func BenchmarkCodecEncodeRenewal(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		e := newExpression()
		_ = writeItemUpdate(e, benchKeys, benchRec, false, rows.WriteOptions{})
		_ = benchKeys.updateCondition(e, resourcelock.Precondition{RVN: benchRec.RVN, HolderIdentity: benchRec.HolderIdentity})
	}
}

// BenchmarkCodecEncodeAcquire builds an acquiring write: the update with
// the acquisition counted, and the create condition.
func BenchmarkCodecEncodeAcquire(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		e := newExpression()
		_ = writeItemUpdate(e, benchKeys, benchRec, true, rows.WriteOptions{})
		_ = benchKeys.createCondition(e)
	}
}

// BenchmarkCodecDecodeItem reads a whole row written by dynalease.
func BenchmarkCodecDecodeItem(b *testing.B) {
	item := benchItem("customer-42")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := benchKeys.decodeItem(item); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecDecodeJavaItem reads a row written by the AWS Java lock
// client.
func BenchmarkCodecDecodeJavaItem(b *testing.B) {
	item := GoldenJavaItems(b)[GoldenHeld]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord(item); err != nil {
			b.Fatal(err)
		}
	}
}

// benchAPI answers every request at once with a fixed item, as DynamoDB
// would for a write that passed its condition (ReturnValues ALL_NEW).
type benchAPI struct {
	item map[string]types.AttributeValue
}

func (a benchAPI) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: a.item}, nil
}

func (a benchAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{Attributes: a.item}, nil
}

func (a benchAPI) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

func (a benchAPI) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{}, nil
}

func (a benchAPI) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}

func benchStore(b *testing.B) *Store {
	answer := benchItem("customer-42")
	for name, v := range answer { // fresh copies, as a decoded answer has
		if sv, ok := v.(*types.AttributeValueMemberS); ok {
			answer[name] = &types.AttributeValueMemberS{Value: strings.Clone(sv.Value)}
		}
	}
	s, err := New(Config{Client: benchAPI{item: answer}, Table: "locks", SkipTableCheck: true})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkDynamoDBStoreUpdate is a holder's renewal through the
// DynamoDB store with an instant client: validation, encoding, the request
// timeout and decoding the returned item.
func BenchmarkDynamoDBStoreUpdate(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	key := resourcelock.Key{Partition: "customer-42"}
	expect := resourcelock.Precondition{RVN: benchRec.RVN, HolderIdentity: benchRec.HolderIdentity}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rs(s).Update(ctx, key, expect, benchRec, rows.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDynamoDBStoreGet is a candidate's poll through the DynamoDB
// store with an instant client.
func BenchmarkDynamoDBStoreGet(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	key := resourcelock.Key{Partition: "customer-42"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rs(s).Get(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryStoreUpdate is a holder's renewal on the in-memory store.
func BenchmarkMemoryStoreUpdate(b *testing.B) {
	m := memorystore.New()
	ctx := context.Background()
	key := resourcelock.Key{Partition: "customer-42"}
	it, err := rows.MustOpen(m).Create(ctx, key, benchRec, rows.WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rvns := [2]string{benchRec.RVN, "1b2c3d4e-5f60-4172-8394-a5b6c7d8e9f0"}
	rec := benchRec
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		expect := resourcelock.Precondition{RVN: it.RVN, HolderIdentity: rec.HolderIdentity}
		i++
		rec.RVN = rvns[i%2]
		if it, err = rows.MustOpen(m).Update(ctx, key, expect, rec, rows.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWriteAnswersShareTheWrittenStrings checks that a write's answer
// refers to the strings of the record written, not to copies decoded from
// the answer (whose memory the SDK shares with the rest of the answer):
// a held lock keeps them for as long as it is held.
func TestWriteAnswersShareTheWrittenStrings(t *testing.T) {
	answer := benchItem("customer-42")
	for name, v := range answer { // fresh copies, as a decoded answer has
		if sv, ok := v.(*types.AttributeValueMemberS); ok {
			answer[name] = &types.AttributeValueMemberS{Value: strings.Clone(sv.Value)}
		}
	}
	s, err := New(Config{Client: benchAPI{item: answer}, Table: "locks", SkipTableCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	key := resourcelock.Key{Partition: "customer-42"}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	check := func(op string, it rows.Item, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if !same(it.RVN, benchRec.RVN) || !same(it.HolderIdentity, benchRec.HolderIdentity) ||
			!same(it.AcquisitionID, benchRec.AcquisitionID) || !same(it.Key.Partition, key.Partition) {
			t.Errorf("%s: the answer's strings are copies, not the record's and key's", op)
		}
	}
	it, err := rs(s).Update(context.Background(), key, resourcelock.Precondition{RVN: "old", HolderIdentity: benchRec.HolderIdentity}, benchRec, rows.WriteOptions{})
	check("update", it, err)
	it, err = rs(s).Create(context.Background(), key, benchRec, rows.WriteOptions{})
	check("create", it, err)
}
