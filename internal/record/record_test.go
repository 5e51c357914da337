package record

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/resourcelock"
)

func TestCheckKeyEnforcesDynamoDBsKeyLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  resourcelock.Key
		ok   bool
	}{
		{"empty partition", resourcelock.Key{}, false},
		{"partition at the limit", resourcelock.Key{Partition: strings.Repeat("p", MaxNameBytes)}, true},
		{"partition over the limit", resourcelock.Key{Partition: strings.Repeat("p", MaxNameBytes+1)}, false},
		{"sort at the limit", resourcelock.Key{Partition: "p", Sort: strings.Repeat("s", MaxSortKeyBytes)}, true},
		{"sort over the limit", resourcelock.Key{Partition: "p", Sort: strings.Repeat("s", MaxSortKeyBytes+1)}, false},
	} {
		err := CheckKey(tc.key)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case !tc.ok && !errors.Is(err, dynalease.ErrInvalid):
			t.Errorf("%s: %v, want dynalease.ErrInvalid", tc.name, err)
		}
	}
}

// testAcquire is a normalized time.
var testAcquire = time.Date(2026, 11, 21, 12, 30, 45, 123_000_000, time.UTC)

func TestNormalizedTimes(t *testing.T) {
	if got := normalizeTime(time.Time{}); !got.IsZero() {
		t.Errorf("zero time normalized to %v", got)
	}
	berlin := time.FixedZone("CET", 3600)
	in := time.Date(2026, 11, 21, 13, 30, 45, 123_999_999, berlin)
	got := normalizeTime(in)
	if got != testAcquire { // == also compares location and monotonic reading
		t.Errorf("normalizeTime(%v) = %v, want %v", in, got, testAcquire)
	}
	now := time.Now()
	n := normalizeTime(now)
	if strings.Contains(n.String(), "m=") || n.Location() != time.UTC || n.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("normalizeTime(%v) = %v, want UTC, millisecond precision, no monotonic reading", now, n)
	}
	if now.Sub(n) < 0 || now.Sub(n) >= time.Millisecond {
		t.Errorf("normalizeTime(%v) = %v, not truncated to the millisecond", now, n)
	}
}

func TestNormalizedRecord(t *testing.T) {
	data := []byte("abc")
	in := resourcelock.Record{
		RVN: "r", LeaseDuration: time.Millisecond + 1,
		AcquireTime: time.Now(), RenewTime: time.Now().In(time.FixedZone("X", -7200)),
		Data: data,
	}
	got := Normalize(in)
	if got.LeaseDuration != 2*time.Millisecond {
		t.Errorf("lease %v, want 2ms", got.LeaseDuration)
	}
	for _, at := range []time.Time{got.AcquireTime, got.RenewTime} {
		if at != normalizeTime(at) {
			t.Errorf("time %v not normalized", at)
		}
	}
	data[0] = 'X'
	if string(got.Data) != "abc" {
		t.Errorf("normalized data shares memory with the input: %q", got.Data)
	}
	if got := Normalize(resourcelock.Record{Data: []byte{}}); got.Data != nil {
		t.Errorf("empty data normalized to %#v, want nil", got.Data)
	}
}
