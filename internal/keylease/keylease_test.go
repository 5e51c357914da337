package keylease

import (
	"testing"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
)

// A lease's TTL sets each write's Expires from the write's own wall-clock
// time; an explicit Expires, or KeepTTL, wins.
func TestOptionsAtSetTheTTLAfterTheWrite(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := now.Add(time.Minute)
	for _, c := range []struct {
		name string
		o    Options
		want time.Time
	}{
		{"no TTL", Options{}, time.Time{}},
		{"a TTL", Options{TTL: time.Hour}, now.Add(time.Hour)},
		{"an explicit time", Options{WriteOptions: rows.WriteOptions{Expires: at}, TTL: time.Hour}, at},
		{"the row's kept", Options{WriteOptions: rows.WriteOptions{KeepTTL: true}, TTL: time.Hour}, time.Time{}},
	} {
		if got := c.o.At(now).Expires; !got.Equal(c.want) {
			t.Errorf("%s: Expires %v, want %v", c.name, got, c.want)
		}
	}
}
