package lock

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/resourcelock"
)

// Info is a lock row as read, with no power over the lock: nothing done
// with an Info can release or heartbeat anybody's lock.
type Info struct {
	Key     string
	SortKey string
	// HolderIdentity is the holder identity in the row (the holder, or the last holder
	// when Released).
	HolderIdentity string
	// RVN is the row's record version number.
	RVN string
	// LeaseDuration is the holder's lease as written in the row.
	LeaseDuration time.Duration
	Released      bool
	Data          []byte
	// Attributes are the row's additional attributes.
	Attributes map[string]types.AttributeValue
	// Numbers are the row's integer attributes (see WithNumbers); the
	// DynamoDB store shows them in Attributes too.
	Numbers map[string]int64
	// Acquisitions counts the acquisitions recorded in the row.
	Acquisitions int64
	// Token is the row's fencing token, 0 when it has none (never fenced).
	Token int64
	// RenewTime is the writer's wall-clock time of the row's last write,
	// as written: informational only, never used for timing.
	RenewTime time.Time
	// Err is set for a row that could not be decoded; only Key and SortKey
	// are meaningful then.
	Err error
}

func infoOf(it resourcelock.Item, err error) Info {
	return Info{
		Key:            it.Key.Partition,
		SortKey:        it.Key.Sort,
		HolderIdentity: it.HolderIdentity,
		RVN:            it.RVN,
		LeaseDuration:  it.LeaseDuration,
		Released:       it.Released,
		Data:           it.Data,
		Attributes:     attributeValues(it.Attributes),
		Numbers:        it.Numbers,
		Acquisitions:   it.Acquisitions,
		Token:          it.FencingToken(),
		RenewTime:      it.RenewTime,
		Err:            err,
	}
}

// attributeValues returns a row's application attributes as DynamoDB
// values: the only kind this client writes (a store's other values are
// left out).
func attributeValues(attrs map[string]any) map[string]types.AttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(attrs))
	for name, v := range attrs {
		if av, ok := v.(types.AttributeValue); ok {
			out[name] = av
		}
	}
	return out
}
