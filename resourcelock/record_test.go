package resourcelock

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckKeyEnforcesDynamoDBsKeyLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  Key
		ok   bool
	}{
		{"empty partition", Key{}, false},
		{"partition at the limit", Key{Partition: strings.Repeat("p", MaxNameBytes)}, true},
		{"partition over the limit", Key{Partition: strings.Repeat("p", MaxNameBytes+1)}, false},
		{"sort at the limit", Key{Partition: "p", Sort: strings.Repeat("s", MaxSortKeyBytes)}, true},
		{"sort over the limit", Key{Partition: "p", Sort: strings.Repeat("s", MaxSortKeyBytes+1)}, false},
	} {
		err := CheckKey(tc.key)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case !tc.ok && !errors.Is(err, ErrInvalidArgument):
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
}
