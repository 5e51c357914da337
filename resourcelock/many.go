package resourcelock

import (
	"context"
	"fmt"
	"slices"

	"github.com/dynalease/dynalease"
)

// ManyStore is a Store that also reads and writes several rows in one
// request, all or nothing: what a lock on a set of keys needs, so that it
// never holds some of its keys while waiting for the others (see Set).
// dynamodbstore implements it with TransactGetItems and
// TransactWriteItems; the memory store implements it too.
type ManyStore interface {
	Store
	// GetMany returns the rows at keys, read as one consistent snapshot,
	// by key; a missing row is absent from the map. It returns each row's
	// key and record without its data, and the queue of the first key
	// named only (a Set's queue is its first member's): no Data,
	// Attributes or Expires, and no other queue, so that a read of many
	// rows stays small. keys must be distinct and at most MaxMany.
	GetMany(ctx context.Context, keys []Key) (map[Key]Item, error)
	// WriteMany applies every write or none, each with the condition of
	// its Kind. When any condition fails it applies none and returns an
	// error wrapping ErrConflict; the error carries no row (CurrentItem
	// reports none), so a caller that needs them reads. A WriteMany whose
	// answer was lost may have landed, whole. Keys must be distinct and
	// at most MaxMany; a write's options may not carry OnlyIfExists. A
	// write's Dequeue conditions that row's write on its queue and takes
	// the entries it names out, as for Store.Update.
	WriteMany(ctx context.Context, writes []Write) error
	// MaxMany returns the most rows one GetMany or WriteMany may name.
	MaxMany() int
	// FenceMany gives the rows at keys one new fencing generation, higher
	// than every generation the store gave any of them before, and
	// restarts their counters at 2, all or nothing: each row must name
	// holder and carry acquisitionID, or it returns an error wrapping
	// ErrConflict and changes no row. So the rows then carry one fencing
	// token, higher than every token any of them carried before, and
	// every later acquisition of any of them gets a higher one still. It
	// returns the generation. It may send several requests, and refuses
	// more keys than MaxFenceMany. dynalease.ErrInvalid when the store keeps no
	// generations.
	FenceMany(ctx context.Context, keys []Key, holder, acquisitionID string) (int64, error)
	// MaxFenceMany returns the most rows one FenceMany may name.
	MaxFenceMany() int
}

// WriteKind is the condition and action of one row of a WriteMany.
type WriteKind int

const (
	// WriteCreate writes the record when the row is missing or released.
	// Unlike Store.Create it takes a released row whatever its queue: a
	// set queues on its first key only, and is not ordered against the
	// waiters of its other keys.
	WriteCreate WriteKind = iota
	// WriteUpdate writes the record when the row satisfies Expect, as
	// Store.Update does.
	WriteUpdate
	// WriteRemove deletes the row when it satisfies Expect, as
	// Store.Remove does.
	WriteRemove
)

// Write is one row of a WriteMany.
type Write struct {
	Key    Key
	Kind   WriteKind
	Expect Precondition // WriteUpdate and WriteRemove
	Record Record       // WriteCreate and WriteUpdate
	// Options are those of Store.Create and Store.Update, without
	// OnlyIfExists; a Dequeue is allowed on WriteCreate and WriteUpdate.
	Options WriteOptions
}

// acquiring reports whether the write starts a new acquisition of the row:
// a create, or an update that does not name the holder it expects (a
// takeover).
func (w Write) acquiring() bool {
	return w.Kind == WriteCreate || (w.Kind == WriteUpdate && w.Expect.HolderIdentity == "")
}

// CheckMany validates the keys of a GetMany or WriteMany against max, the
// store's MaxMany, before any request: at least one, at most max, each
// valid, none twice.
func CheckMany(keys []Key, max int) error {
	if len(keys) == 0 {
		return fmt.Errorf("%w: no keys", dynalease.ErrInvalid)
	}
	if len(keys) > max {
		return fmt.Errorf("%w: %d keys, over the %d one request may name", dynalease.ErrInvalid, len(keys), max)
	}
	seen := make(map[Key]bool, len(keys))
	for _, k := range keys {
		if err := k.Check(); err != nil {
			return err
		}
		if seen[k] {
			return fmt.Errorf("%w: key %s named twice", dynalease.ErrInvalid, k)
		}
		seen[k] = true
	}
	return nil
}

// PrepareWrites validates writes before any request, as CheckMany and
// PrepareWrite do, and returns them as written.
func PrepareWrites(writes []Write, max int) ([]Write, error) {
	keys := make([]Key, len(writes))
	for i, w := range writes {
		keys[i] = w.Key
	}
	if err := CheckMany(keys, max); err != nil {
		return nil, err
	}
	out := slices.Clone(writes)
	for i, w := range out {
		if w.Options.OnlyIfExists {
			return nil, fmt.Errorf("%w: a write of many rows cannot require an existing row", dynalease.ErrInvalid)
		}
		if len(w.Options.Below) > 0 {
			return nil, fmt.Errorf("%w: a write of many rows cannot require integer attributes (Below)", dynalease.ErrInvalid)
		}
		if w.Options.Dequeue != nil && w.Kind == WriteRemove {
			return nil, fmt.Errorf("%w: a removal cannot dequeue", dynalease.ErrInvalid)
		}
		switch w.Kind {
		case WriteCreate:
		case WriteUpdate, WriteRemove:
			if err := w.Expect.Check(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%w: unknown write kind %d", dynalease.ErrInvalid, w.Kind)
		}
		if w.Kind == WriteRemove {
			continue
		}
		rec, opts, err := PrepareWrite(w.Key, w.Record, w.Options)
		if err != nil {
			return nil, err
		}
		out[i].Record, out[i].Options = rec, opts
	}
	return out, nil
}
