package resourcelock

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The fuzz targets of the review issue: rows that other writers made (AWS
// Java clients of several versions, hand edits, a corrupted item) and
// arguments users type. No input may panic, and nothing may be taken as a
// lock it is not. go test runs each target's seeds (f.Add and
// testdata/fuzz); make fuzz searches for FUZZTIME each.

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
	if extra != "" {
		fuzzAttr(item, extra, shape>>22, str(owner), rvn)
	}
	return item
}

// FuzzDecodeItem: any item decodes to a record that satisfies the
// record's invariants, and that the holder it names could write back (a
// renewal or a takeover keeps its times and data), or fails with an error
// matching ErrInvalidRecord; never a panic. A row is released only when
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
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("decode error %v does not match ErrInvalidRecord", err)
			}
			return
		}
		rec := it.Record
		if rec.HolderIdentity == "" || rec.RVN == "" {
			t.Fatalf("decoded a record without holder or RVN: %+v", rec)
		}
		if rec.LeaseDuration <= 0 || rec.LeaseDuration > maxLeaseDuration || rec.LeaseDuration%time.Millisecond != 0 {
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
		if tok := rec.FencingToken(); tok != 0 && (tok < 0 || rec.NeedsFence() || tok>>counterBits != rec.FenceGeneration || tok&MaxFenceCounter != rec.LeaderTransitions) {
			t.Fatalf("token %d from generation %d counter %d", tok, rec.FenceGeneration, rec.LeaderTransitions)
		}
		// Whatever was read can be written back by its holder: renewals
		// and takeovers carry the times and data they found.
		if len(rec.Data) <= MaxDataBytes && len(rec.HolderIdentity) <= MaxIdentityBytes {
			if _, err := prepareWrite(rec.HolderIdentity, rec); err != nil {
				t.Fatalf("a decoded record cannot be written back: %v (%+v)", err, rec)
			}
		}
	})
}

// FuzzRecordValidation: prepareWrite either refuses a record with an
// error matching ErrInvalidArgument or returns it normalized: idempotent,
// the lease rounded up to a positive whole number of milliseconds within
// the limit, times in UTC at millisecond precision within the years 1 to
// 9999, the holder filled in; never a panic.
func FuzzRecordValidation(f *testing.F) {
	f.Add("me", "", "rvn", int64(20*time.Second), false, int64(1_764_072_000_123_456_789), int64(0), []byte("x"))
	f.Add("me", "me", "rvn", int64(1), true, int64(-62135596800_000_000_0), int64(253402300799_999_999_9), []byte{})
	f.Add("me", "other", "", int64(-1), false, int64(0), int64(0), []byte(nil))
	f.Add("me", "", "r", int64(maxLeaseDuration)+1, false, int64(1<<62), int64(-1<<62), []byte(nil))
	f.Fuzz(func(t *testing.T, id, holder, rvn string, lease int64, released bool, acquired, renewed int64, data []byte) {
		rec := Record{HolderIdentity: holder, RVN: rvn, LeaseDuration: time.Duration(lease), Released: released, Data: data}
		if acquired != 0 {
			rec.AcquireTime = time.Unix(0, acquired)
		}
		if renewed != 0 {
			rec.RenewTime = time.Unix(0, renewed).In(time.FixedZone("x", 3600))
		}
		got, err := prepareWrite(id, rec)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("refusal %v does not match ErrInvalidArgument", err)
			}
			return
		}
		if again := normalized(got); !again.Equal(got) {
			t.Fatalf("normalization is not idempotent: %+v then %+v", got, again)
		}
		if got.HolderIdentity != id || got.RVN != rvn {
			t.Fatalf("holder %q RVN %q, want %q %q", got.HolderIdentity, got.RVN, id, rvn)
		}
		if got.LeaseDuration < rec.LeaseDuration || got.LeaseDuration <= 0 || got.LeaseDuration%time.Millisecond != 0 || got.LeaseDuration > maxLeaseDuration {
			t.Fatalf("lease %v from %v", got.LeaseDuration, rec.LeaseDuration)
		}
		for _, tm := range []time.Time{got.AcquireTime, got.RenewTime} {
			if tm.IsZero() {
				continue
			}
			if tm.Location() != time.UTC || tm.Nanosecond()%int(time.Millisecond) != 0 || tm.Year() < 1 || tm.Year() > 9999 {
				t.Fatalf("time %v not normalized", tm)
			}
			// What is stored can be read back as it was written.
			back, err := time.Parse(time.RFC3339Nano, tm.Format(time.RFC3339Nano))
			if err != nil || !back.Equal(tm) {
				t.Fatalf("time %v does not survive its RFC 3339 form: %v %v", tm, back, err)
			}
		}
		if !bytes.Equal(got.Data, data) && !(len(got.Data) == 0 && len(data) == 0) {
			t.Fatal("data changed")
		}
	})
}

// FuzzCheckKey: CheckKey accepts exactly the keys within DynamoDB's
// limits, refuses the others with an error matching ErrInvalidArgument,
// and an accepted key round-trips through a store; never a panic.
func FuzzCheckKey(f *testing.F) {
	f.Add("job", "")
	f.Add("", "sort")
	f.Add("k", string(make([]byte, MaxSortKeyBytes+1)))
	f.Add(string(make([]byte, MaxNameBytes)), "s")
	f.Add("naïve/ключ/🔒", "\x00\xff")
	f.Fuzz(func(t *testing.T, partition, sort string) {
		k := Key{Partition: partition, Sort: sort}
		err := CheckKey(k)
		within := len(partition) >= 1 && len(partition) <= MaxNameBytes && len(sort) <= MaxSortKeyBytes
		if within != (err == nil) {
			t.Fatalf("CheckKey(%d-byte partition, %d-byte sort) = %v", len(partition), len(sort), err)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("refusal %v does not match ErrInvalidArgument", err)
			}
			return
		}
		if !utf8.ValidString(partition) || !utf8.ValidString(sort) {
			return // DynamoDB's S type is UTF-8; the store refuses the rest at the server
		}
		s := NewMemoryStore()
		ctx := t.Context()
		rec := Record{RVN: "r" + strconv.Itoa(len(partition)), LeaseDuration: time.Second, HolderIdentity: "me"}
		if _, err := s.Create(ctx, k, rec, WriteOptions{}); err != nil {
			t.Fatalf("Create(%q): %v", k, err)
		}
		it, err := s.Get(ctx, k)
		if err != nil || it.Key != k || it.RVN != rec.RVN {
			t.Fatalf("Get(%q) = %+v, %v", k, it.Key, err)
		}
	})
}
