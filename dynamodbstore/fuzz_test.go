package dynamodbstore

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// The fuzz target of rows that other writers made (AWS Java clients of
// several versions, hand edits, a corrupted item): no item may panic the
// decoder or be taken as a lease it is not. go test runs its seeds (f.Add
// and testdata/fuzz); make fuzz searches for FUZZTIME.

// fuzzAttr builds one attribute of a fuzzed item: shape (two bits) picks
// absent, the right type, a string, or a number.
func fuzzAttr(item map[string]types.AttributeValue, name string, shape uint32, right func() types.AttributeValue, raw string) {
	switch shape & 3 {
	case 0:
	case 1:
		item[name] = right()
	case 2:
		item[name] = &types.AttributeValueMemberS{Value: raw}
	case 3:
		item[name] = &types.AttributeValueMemberN{Value: raw}
	}
}

// fuzzItem builds an item from the fuzzer's values: each of the lock
// attributes present or not, of its own type or another, with any value,
// plus one attribute of any name.
func fuzzItem(owner, rvn, lease, released, transitions, generation, acquisition, acquired, renewed string, data []byte, shape uint32, extra string) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: "k"}}
	str := func(v string) func() types.AttributeValue {
		return func() types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	}
	num := func(v string) func() types.AttributeValue {
		return func() types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	}
	fuzzAttr(item, attrOwner, shape, str(owner), owner)
	fuzzAttr(item, attrRVN, shape>>2, str(rvn), rvn)
	fuzzAttr(item, attrLease, shape>>4, str(lease), lease)
	fuzzAttr(item, attrReleased, shape>>6, str(released), released)
	fuzzAttr(item, attrTransitions, shape>>8, num(transitions), transitions)
	fuzzAttr(item, attrGeneration, shape>>10, num(generation), generation)
	fuzzAttr(item, attrAcquisition, shape>>12, str(acquisition), acquisition)
	fuzzAttr(item, attrAcquireTime, shape>>14, str(acquired), acquired)
	fuzzAttr(item, attrRenewTime, shape>>16, str(renewed), renewed)
	fuzzAttr(item, attrData, shape>>18, func() types.AttributeValue { return &types.AttributeValueMemberB{Value: data} }, string(data))
	fuzzAttr(item, "ttl", shape>>20, num(lease), lease)
	if extra != "" && extra != "key" { // DynamoDB keeps the key attribute of the schema's type
		fuzzAttr(item, extra, shape>>22, str(owner), rvn)
	}
	return item
}

// FuzzDecodeItem: any item decodes to a record that satisfies the
// record's invariants, and that the holder it names could write back (a
// renewal or a takeover keeps its times and data), or fails with an error
// matching resourcelock.ErrPermanent; never a panic. A row is released only when
// isReleased is the string "1", as for the Java client.
func FuzzDecodeItem(f *testing.F) {
	f.Add("host-1b2c", "7b0e5f9c-3c0e-4a53-8f0e-1c2d3e4f5a6b", "20000", "1", "3", "2", "7b0e", "2026-11-25T12:00:00.123Z", "2026-11-25T12:00:05Z", []byte("data"), uint32(0x3ffff5), "tenant")
	f.Add("a", "r", "1", "0", "1", "0", "", "", "", []byte{}, uint32(0x15), "")
	f.Add("a", "r", "9223372036854", "1", "x", "-1", "", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", []byte(nil), uint32(0x5ffff), "ttl")
	f.Add("a", "r", "20s", "true", "1e3", "1.5", "", "yesterday", "", []byte{0}, uint32(0xfffff), "recordVersionNumber")
	f.Add("a", "r", "1000", "", "", "", "", "0000-01-01T00:00:00Z", "", []byte(nil), uint32(1|1<<2|1<<4|1<<14), "")
	schema := keySchema{partitionKey: "key", ttl: "ttl"}
	f.Fuzz(func(t *testing.T, owner, rvn, lease, released, transitions, generation, acquisition, acquired, renewed string, data []byte, shape uint32, extra string) {
		item := fuzzItem(owner, rvn, lease, released, transitions, generation, acquisition, acquired, renewed, data, shape, extra)
		it, err := schema.decodeItem(item)
		if err != nil {
			if !errors.Is(err, resourcelock.ErrPermanent) {
				t.Fatalf("decode error %v does not match resourcelock.ErrPermanent", err)
			}
			return
		}
		rec := it.Record
		if rec.HolderIdentity == "" || rec.RVN == "" {
			t.Fatalf("decoded a record without holder or RVN: %+v", rec)
		}
		if rec.LeaseDuration <= 0 || rec.LeaseDuration > record.MaxLeaseDuration || rec.LeaseDuration%time.Millisecond != 0 {
			t.Fatalf("decoded lease %v", rec.LeaseDuration)
		}
		rel, _ := item[attrReleased].(*types.AttributeValueMemberS)
		if rec.Released != (rel != nil && rel.Value == "1") {
			t.Fatalf("released %v from isReleased %v", rec.Released, item[attrReleased])
		}
		if it.Key.Partition != "k" {
			t.Fatalf("key %q", it.Key.Partition)
		}
		for name := range it.Attributes {
			if schema.reserved(name) {
				t.Fatalf("reserved attribute %q returned as an application attribute", name)
			}
		}
		if tok := rows.Token(rec); tok != 0 && (tok < 0 || rows.NeedsFence(rec) || tok>>32 != rec.FenceGeneration || tok&(1<<32-1) != rec.Acquisitions) {
			t.Fatalf("token %d from generation %d counter %d", tok, rec.FenceGeneration, rec.Acquisitions)
		}
		// Whatever was read can be written back by its holder: renewals
		// and takeovers carry the times and data they found.
		if len(rec.Data) <= record.MaxDataBytes && len(rec.HolderIdentity) <= record.MaxIdentityBytes {
			if _, _, err := record.Prepare(resourcelock.Key{Partition: "k"}, rec, rows.WriteOptions{}); err != nil {
				t.Fatalf("a decoded record cannot be written back: %v (%+v)", err, rec)
			}
		}
	})
}
