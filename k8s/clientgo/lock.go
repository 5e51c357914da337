package clientgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// GroupResource names dynalease rows in the NotFound errors Get returns
// (apierrors.IsNotFound reports them).
var GroupResource = schema.GroupResource{Group: "dynalease.io", Resource: "leases"}

// ErrNoRecord is returned by Update when this Lock knows no current RVN of
// the row to condition the write on: before a Get or Create, and after a
// write that failed (the row may have moved, or the write landed unseen).
var ErrNoRecord = errors.New("clientgo: Update without a known record version: Get first")

// ErrNotATakeover is returned, writing nothing, by an Update that would
// take the row over from another holder without being client-go's
// takeover of the row as last read: a record whose LeaderTransitions is
// not one above the row's. It is what a renewal looks like after the row
// changed hands unseen (client-go's renewal without a Get), or after a
// Get by someone other than the elector.
var ErrNotATakeover = errors.New("clientgo: a renewal of a row another holder took: refused")

// Config configures a Lock.
type Config struct {
	// Store holds the row: dynamodbstore.New's Store, or
	// memorystore.New's in tests. Required.
	Store resourcelock.Store
	// Name is the row's partition key value (and the election's name).
	// Required.
	Name string
	// SortKeyValue is the row's sort key value, on a table with a sort
	// key; empty otherwise.
	SortKeyValue string
	// Identity is this candidate's holder identity. Required, and unique
	// among every holder of the row, in every cluster and process, for
	// the life of this Lock: add a UUID to a pod name (as
	// controller-runtime does by default), since pods of StatefulSets in
	// two clusters, or a restarted pod, share names. Two holders sharing
	// one identity take the row from each other.
	Identity string
	// Logger receives RecordEvent's events and the Lock's logs; silent
	// when unset.
	Logger logr.Logger
}

// Lock is client-go's resourcelock.Interface on one dynalease row, for one
// elector: its methods are safe to call from several goroutines, but every
// Get sets the version the next Update is conditioned on, so only the
// elector may call them (read the row through the store to look at it).
type Lock struct {
	store    rows.Store
	key      resourcelock.Key
	identity string
	log      logr.Logger

	mu   sync.Mutex
	last *rows.Item // the row as last read or written; nil when unknown
	// mine: the RVNs of this Lock's writes that may be on the row (every
	// write sent, whether or not its answer came back); a row carrying
	// one is this Lock's hold.
	mine []string
}

// maxMine bounds the RVNs a Lock remembers as its own writes.
const maxMine = 8

var _ rl.Interface = (*Lock)(nil)

// New returns a Lock on the row cfg names. It sends no request.
func New(cfg Config) (*Lock, error) {
	switch {
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: Store is nil", dynalease.ErrInvalid)
	case cfg.Identity == "":
		return nil, fmt.Errorf("%w: Identity is empty", dynalease.ErrInvalid)
	}
	key := resourcelock.Key{Partition: cfg.Name, Sort: cfg.SortKeyValue}
	if err := record.CheckKey(key); err != nil {
		return nil, err
	}
	store, err := rows.Open(cfg.Store, "Store")
	if err != nil {
		return nil, err
	}
	return &Lock{store: store, key: key, identity: cfg.Identity, log: cfg.Logger}, nil
}

// Get reads the row and returns it as a LeaderElectionRecord, with raw
// bytes that differ for every write of the row (they carry its RVN). A
// missing row is an error for which apierrors.IsNotFound is true.
func (l *Lock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	it, err := l.store.Get(ctx, l.key)
	if errors.Is(err, resourcelock.ErrNotFound) {
		l.remember(nil)
		return nil, nil, apierrors.NewNotFound(GroupResource, l.key.String())
	}
	if err != nil {
		return nil, nil, err
	}
	l.remember(&it)
	ler := toRecord(it.Record)
	raw, err := rawRecord(ler, it.RVN)
	if err != nil {
		return nil, nil, err
	}
	return &ler, raw, nil
}

// Create writes ler when the row is missing or released.
func (l *Lock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	rec, err := l.record(ler)
	if err != nil {
		return err
	}
	l.sending(rec.RVN)
	it, err := l.store.Create(ctx, l.key, rec, rows.WriteOptions{})
	if err != nil {
		return l.failed(err)
	}
	l.remember(&it)
	return nil
}

// Update writes ler when the row still carries the RVN this Lock last read
// or wrote (a compare-and-set), and fails otherwise, writing nothing
// (ErrConflict from the store; ErrNoRecord when no RVN is known). What it
// writes depends on the row as last seen:
//   - a row this Lock wrote, held: ler renews it (conditioned on this
//     identity too, keeping the acquisition and its fencing token), or,
//     with no holder, releases it;
//   - another holder's row, or a released one: ler takes it over, a new
//     acquisition, only when it is client-go's takeover of that row (its
//     LeaderTransitions one above the row's); otherwise it returns
//     ErrNotATakeover;
//   - a row naming this identity that this Lock did not write (a restart
//     under the same identity, or a holder sharing it: see
//     Config.Identity): ler takes it over as a new acquisition.
//
// A release of a row this Lock does not hold writes nothing and returns
// nil: there is nothing of its own to release. A renewal or release that
// finds, instead of the RVN last seen, a later write of this Lock's own
// still held (one whose answer was lost and that landed after the row was
// read) is written on top of it, conditioned on that RVN: a lost answer
// never makes ReleaseOnCancel leave the row held.
func (l *Lock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	l.mu.Lock()
	last, mine := l.last, l.last != nil && slices.Contains(l.mine, l.last.RVN)
	l.mu.Unlock()
	if last == nil {
		return ErrNoRecord
	}
	rec, err := l.record(ler)
	if err != nil {
		return err
	}
	ours := mine && last.HolderIdentity == l.identity && !last.Released && last.HandedTo == ""
	expect := resourcelock.Precondition{RVN: last.RVN}
	switch {
	case ours:
		// A renewal or release of this Lock's own hold: it keeps the
		// acquisition (and its fencing token).
		expect.HolderIdentity = l.identity
	case ler.HolderIdentity == "":
		l.log.V(1).Info("release of a row this lock does not hold: nothing written", "holder", last.HolderIdentity)
		return nil
	case (last.HolderIdentity != l.identity || last.Released) && ler.LeaderTransitions != int(last.Acquisitions)+1:
		return fmt.Errorf("%w (the row is %q's, transitions %d; the record says %d)", ErrNotATakeover, last.HolderIdentity, last.Acquisitions, ler.LeaderTransitions)
	}
	l.sending(rec.RVN)
	it, err := l.store.Update(ctx, l.key, expect, rec, rows.WriteOptions{})
	if cur, ok := rows.CurrentItem(err); ok && ours && l.ownWrite(cur) {
		// An earlier write of this Lock whose answer was lost (a renewal
		// cut short by the elector's cancel, say) landed after the row was
		// read: the row is still this Lock's own. The write goes on top of
		// it, conditioned on that RVN, which only this Lock wrote.
		expect.RVN = cur.RVN
		rec.RVN = uuid.NewString()
		l.sending(rec.RVN)
		it, err = l.store.Update(ctx, l.key, expect, rec, rows.WriteOptions{})
	}
	if err != nil {
		return l.failed(err)
	}
	l.remember(&it)
	return nil
}

// ownWrite reports whether it is a row this Lock wrote and still holds: its
// identity, an RVN of its own writes, not released or handed over.
func (l *Lock) ownWrite(it rows.Item) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return it.HolderIdentity == l.identity && !it.Released && it.HandedTo == "" && slices.Contains(l.mine, it.RVN)
}

// failed forgets the row after a write that failed, so that the next
// Update needs a Get: a write refused because the row moved must not be
// retried on the same RVN, and one whose answer was lost may have landed.
func (l *Lock) failed(err error) error {
	l.remember(nil)
	return err
}

// RecordEvent logs the elector's event.
func (l *Lock) RecordEvent(s string) {
	l.log.Info("leader election event", "event", s, "identity", l.identity, "lock", l.Describe())
}

// Identity returns this candidate's identity.
func (l *Lock) Identity() string { return l.identity }

// Describe names the row: the store's description and the key.
func (l *Lock) Describe() string { return l.store.Describe() + "/" + l.key.String() }

// sending notes rvn as this Lock's own before its write is sent.
func (l *Lock) sending(rvn string) {
	l.mu.Lock()
	if len(l.mine) == maxMine {
		l.mine = l.mine[1:]
	}
	l.mine = append(l.mine, rvn)
	l.mu.Unlock()
}

func (l *Lock) remember(it *rows.Item) {
	l.mu.Lock()
	l.last = it
	l.mu.Unlock()
}

// record returns the row's record for ler, with a fresh RVN.
func (l *Lock) record(ler rl.LeaderElectionRecord) (resourcelock.Record, error) {
	if ler.HolderIdentity != "" && ler.HolderIdentity != l.identity {
		return resourcelock.Record{}, fmt.Errorf("%w: the record names holder %q, not this lock's identity %q",
			dynalease.ErrInvalid, ler.HolderIdentity, l.identity)
	}
	if ler.LeaseDurationSeconds <= 0 {
		return resourcelock.Record{}, fmt.Errorf("%w: lease of %d seconds", dynalease.ErrInvalid, ler.LeaseDurationSeconds)
	}
	return resourcelock.Record{
		HolderIdentity: l.identity,
		Released:       ler.HolderIdentity == "",
		RVN:            uuid.NewString(),
		LeaseDuration:  time.Duration(ler.LeaseDurationSeconds) * time.Second,
		AcquireTime:    ler.AcquireTime.Time,
		RenewTime:      ler.RenewTime.Time,
	}, nil
}

// toRecord returns the row's record as client-go sees it: no holder when
// released, the lease in whole seconds, rounded up.
func toRecord(r resourcelock.Record) rl.LeaderElectionRecord {
	ler := rl.LeaderElectionRecord{
		HolderIdentity:       r.HolderIdentity,
		LeaseDurationSeconds: int((r.LeaseDuration + time.Second - 1) / time.Second),
		LeaderTransitions:    int(r.Acquisitions),
	}
	if r.Released {
		ler.HolderIdentity = ""
	}
	if !r.AcquireTime.IsZero() {
		ler.AcquireTime = metav1.NewTime(r.AcquireTime)
	}
	if !r.RenewTime.IsZero() {
		ler.RenewTime = metav1.NewTime(r.RenewTime)
	}
	return ler
}

// rawRecord returns the bytes by which client-go's elector tells one
// write of the row from another: the record and the RVN, as JSON.
func rawRecord(ler rl.LeaderElectionRecord, rvn string) ([]byte, error) {
	return json.Marshal(struct {
		rl.LeaderElectionRecord
		RVN string `json:"rvn"`
	}{ler, rvn})
}
