package lock

import (
	"maps"
	"time"

	"github.com/dynalease/dynalease/internal/rows"
)

// Info is a lock row as read, with no power over the lock: nothing done
// with an Info can release or heartbeat anybody's lock.
type Info struct {
	Key     string
	SortKey string
	// HolderIdentity is the holder identity in the row (the holder, or the last holder
	// when Released); "dynalease:readers" while shared holders
	// hold it.
	HolderIdentity string
	// Readers are the identities of the row's shared holders
	// (AcquireShared), in no particular order; nil unless readers hold it.
	Readers []string
	// Candidates are the priorities of the candidates for election
	// standing on the row (see election.Config.Stand), by identity, as
	// last written (an identity with two entries: the higher): an entry
	// of a candidate that stopped without withdrawing stays until another
	// candidate drops it. Nil when there are none.
	Candidates map[string]int64
	// RVN is the row's record version number.
	RVN string
	// LeaseDuration is the holder's lease as written in the row.
	LeaseDuration time.Duration
	Released      bool
	Data          []byte
	// Attributes are the row's additional attributes, their values of
	// the store's own kind (dynamodbstore: types.AttributeValue).
	Attributes map[string]any
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

	// numbers are the row's integer attributes (a scheduled job's
	// ledger, read through internal/ledger); the DynamoDB store shows
	// them in Attributes too.
	numbers map[string]int64
}

func infoOf(it rows.Item, err error) Info {
	return Info{
		Key:            it.Key.Partition,
		SortKey:        it.Key.Sort,
		HolderIdentity: it.HolderIdentity,
		Readers:        readerIdentities(it),
		Candidates:     candidatesOf(it),
		RVN:            it.RVN,
		LeaseDuration:  it.LeaseDuration,
		Released:       it.Released,
		Data:           it.Data,
		Attributes:     cloneAttributes(it.Attributes),
		numbers:        it.Numbers,
		Acquisitions:   it.Acquisitions,
		Token:          it.Token(),
		RenewTime:      it.RenewTime,
		Err:            err,
	}
}

// readerIdentities returns the identities of it's readers, nil for none.
func readerIdentities(it rows.Item) []string {
	if len(it.Readers) == 0 {
		return nil
	}
	ids := make([]string, len(it.Readers))
	for i, r := range it.Readers {
		ids[i] = r.Identity
	}
	return ids
}

// cloneAttributes returns a copy of a row's attributes, nil for none.
func cloneAttributes(attrs map[string]any) map[string]any {
	if len(attrs) == 0 {
		return nil
	}
	return maps.Clone(attrs)
}

// candidatesOf returns the priorities of it's candidates by identity, nil
// for none.
func candidatesOf(it rows.Item) map[string]int64 {
	if len(it.Candidates) == 0 {
		return nil
	}
	m := make(map[string]int64, len(it.Candidates))
	for _, c := range it.Candidates {
		if p, ok := m[c.Identity]; !ok || c.Priority > p {
			m[c.Identity] = c.Priority
		}
	}
	return m
}
