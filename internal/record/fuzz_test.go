package record_test

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/keylease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/memorystore"
	"github.com/dynalease/dynalease/resourcelock"
)

// The fuzz targets of the review issue: rows that other writers made (AWS
// Java clients of several versions, hand edits, a corrupted item) and
// arguments users type. No input may panic, and nothing may be taken as a
// lock it is not. go test runs each target's seeds (f.Add and
// testdata/fuzz); make fuzz searches for FUZZTIME each.

// FuzzRecordValidation: Prepare either refuses a record with an
// error matching dynalease.ErrInvalid or returns it normalized: idempotent,
// the lease rounded up to a positive whole number of milliseconds within
// the limit, times in UTC at millisecond precision within the years 1 to
// 9999, the holder filled in; never a panic.
func FuzzRecordValidation(f *testing.F) {
	f.Add("me", "", "rvn", int64(20*time.Second), false, int64(1_764_072_000_123_456_789), int64(0), []byte("x"))
	f.Add("me", "me", "rvn", int64(1), true, int64(-62135596800_000_000_0), int64(253402300799_999_999_9), []byte{})
	f.Add("me", "other", "", int64(-1), false, int64(0), int64(0), []byte(nil))
	f.Add("me", "", "r", int64(record.MaxLeaseDuration)+1, false, int64(1<<62), int64(-1<<62), []byte(nil))
	f.Fuzz(func(t *testing.T, id, holder, rvn string, lease int64, released bool, acquired, renewed int64, data []byte) {
		rec := resourcelock.Record{HolderIdentity: holder, RVN: rvn, LeaseDuration: time.Duration(lease), Released: released, Data: data}
		if acquired != 0 {
			rec.AcquireTime = time.Unix(0, acquired)
		}
		if renewed != 0 {
			rec.RenewTime = time.Unix(0, renewed).In(time.FixedZone("x", 3600))
		}
		rec, err := keylease.FillHolder(id, rec, false)
		if err != nil {
			if !errors.Is(err, dynalease.ErrInvalid) {
				t.Fatalf("refusal %v does not match dynalease.ErrInvalid", err)
			}
			return
		}
		got, _, err := record.Prepare(resourcelock.Key{Partition: "k"}, rec, rows.WriteOptions{})
		if err != nil {
			if !errors.Is(err, dynalease.ErrInvalid) {
				t.Fatalf("refusal %v does not match dynalease.ErrInvalid", err)
			}
			return
		}
		if again := record.Normalize(got); !record.Equal(again, got) {
			t.Fatalf("normalization is not idempotent: %+v then %+v", got, again)
		}
		if got.HolderIdentity != id || got.RVN != rvn {
			t.Fatalf("holder %q RVN %q, want %q %q", got.HolderIdentity, got.RVN, id, rvn)
		}
		if got.LeaseDuration < rec.LeaseDuration || got.LeaseDuration <= 0 || got.LeaseDuration%time.Millisecond != 0 || got.LeaseDuration > record.MaxLeaseDuration {
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
// limits, refuses the others with an error matching dynalease.ErrInvalid,
// and an accepted key round-trips through a store; never a panic.
func FuzzCheckKey(f *testing.F) {
	f.Add("job", "")
	f.Add("", "sort")
	f.Add("k", string(make([]byte, record.MaxSortKeyBytes+1)))
	f.Add(string(make([]byte, record.MaxNameBytes)), "s")
	f.Add("naïve/ключ/🔒", "\x00\xff")
	f.Fuzz(func(t *testing.T, partition, sort string) {
		k := resourcelock.Key{Partition: partition, Sort: sort}
		err := record.CheckKey(k)
		within := len(partition) >= 1 && len(partition) <= record.MaxNameBytes && len(sort) <= record.MaxSortKeyBytes
		if within != (err == nil) {
			t.Fatalf("(%d-byte partition, %d-byte sort).Check() = %v", len(partition), len(sort), err)
		}
		if err != nil {
			if !errors.Is(err, dynalease.ErrInvalid) {
				t.Fatalf("refusal %v does not match dynalease.ErrInvalid", err)
			}
			return
		}
		if !utf8.ValidString(partition) || !utf8.ValidString(sort) {
			return // DynamoDB's S type is UTF-8; the store refuses the rest at the server
		}
		s := memorystore.New()
		ctx := t.Context()
		rec := resourcelock.Record{RVN: "r" + strconv.Itoa(len(partition)), LeaseDuration: time.Second, HolderIdentity: "me"}
		if _, err := rows.MustOpen(s).Create(ctx, k, rec, rows.WriteOptions{}); err != nil {
			t.Fatalf("Create(%q): %v", k, err)
		}
		it, err := rows.MustOpen(s).Get(ctx, k)
		if err != nil || it.Key != k || it.RVN != rec.RVN {
			t.Fatalf("Get(%q) = %+v, %v", k, it.Key, err)
		}
	})
}
