package memorystore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Share writes one change of the readers of the row at key.
func (s *rowStore) Share(ctx context.Context, key resourcelock.Key, w rows.Share) (rows.Item, error) {
	if err := record.CheckKey(key); err != nil {
		return rows.Item{}, err
	}
	w, err := record.PrepareShare(w)
	if err != nil {
		return rows.Item{}, err
	}
	if err := s.refuse(ctx); err != nil {
		return rows.Item{}, fmt.Errorf("memory/%s: share: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !ok && w.Op != rows.ShareBegin {
		return rows.Item{}, fmt.Errorf("memory/%s: share: %w", key, resourcelock.ErrNotFound)
	}
	if !shareAdmits(cur, ok, w) {
		return rows.Item{}, conflict(key, "share", cur, ok)
	}
	next := shareApplied(record.Clone(cur), ok, key, w)
	s.items[key] = next
	return record.Clone(next), nil
}

// shareAdmits reports whether the condition of the change w holds on the
// row cur (ok when there is one).
func shareAdmits(cur rows.Item, ok bool, w rows.Share) bool {
	i := record.ReaderPlace(cur, w.Reader.Ticket)
	if !dropAdmits(cur, ok, w) {
		return false
	}
	own := ok && cur.HeldByReaders() && i >= 0 && cur.Readers[i].RVN == w.Expect &&
		(w.SeenLease == 0 || cur.LeaseDuration == w.SeenLease)
	switch w.Op {
	case rows.ShareBegin:
		return !ok || cur.Free()
	case rows.ShareJoin:
		return cur.HeldByReaders() && record.JoinAdmits(cur.Queue, w.Ahead, w.Waiter) && len(cur.Readers) > 0 && len(cur.Readers) < rows.MaxReaders &&
			cur.LeaseDuration == w.SeenLease && !(w.Upgradeable && cur.Upgrader != "")
	case rows.ShareTake:
		return cur.RVN == w.Expect && len(cur.Queue) >= len(w.Dequeue) &&
			record.QueueMatches(cur.Queue, &rows.Dequeue{Tickets: w.Dequeue})
	case rows.ShareRenew:
		return own
	case rows.ShareLeave:
		return own && len(cur.Readers) > 1+len(w.Drop) && (!w.Upgradeable || cur.Upgrader == w.Reader.Ticket)
	case rows.ShareEnd:
		return own && len(cur.Readers) == 1+len(w.Drop) && (!w.Upgradeable || cur.Upgrader == w.Reader.Ticket)
	}
	return false
}

// dropAdmits reports whether the row cur (ok when there is one) holds
// every entry w drops with its RVN, and names the first its upgradeable
// reader when w says so.
func dropAdmits(cur rows.Item, ok bool, w rows.Share) bool {
	if len(w.Drop) == 0 {
		return true
	}
	if !ok || !cur.HeldByReaders() || (w.DropsUpgrader && cur.Upgrader != w.Drop[0].Ticket) {
		return false
	}
	for _, d := range w.Drop {
		if i := record.ReaderPlace(cur, d.Ticket); i < 0 || cur.Readers[i].RVN != d.RVN {
			return false
		}
	}
	return true
}

// shareApplied returns the row cur (ok when there is one) after the
// change w, whose condition held.
func shareApplied(cur rows.Item, ok bool, key resourcelock.Key, w rows.Share) rows.Item {
	if !ok {
		cur = rows.Item{Key: key}
	}
	for _, d := range w.Drop {
		cur.Readers = slices.Delete(cur.Readers, record.ReaderPlace(cur, d.Ticket), record.ReaderPlace(cur, d.Ticket)+1)
	}
	if w.DropsUpgrader {
		cur.Upgrader = ""
	}
	switch w.Op {
	case rows.ShareBegin, rows.ShareTake:
		cur.HolderIdentity, cur.Released, cur.HandedTo = rows.ReadersHolder, false, ""
		cur.Acquisitions++ // the readers' token is above every earlier writer's
		cur.AcquisitionID = w.RVN
		cur.AcquireTime = w.Time
		cur.Readers = []rows.Reader{w.Reader}
		cur.LeaseDuration = w.Reader.Lease
		cur.Upgrader = ""
		cur.Queue = slices.Clone(cur.Queue[len(w.Dequeue):])
		if len(cur.Queue) == 0 {
			cur.Queue = nil
		}
	case rows.ShareJoin:
		cur.Readers = withReader(cur.Readers, w.Reader)
		cur.LeaseDuration = max(w.SeenLease, w.Reader.Lease)
		if w.Waiter != "" {
			cur.Queue = slices.Delete(slices.Clone(cur.Queue), w.Ahead, w.Ahead+1)
			if len(cur.Queue) == 0 {
				cur.Queue = nil
			}
		}
	case rows.ShareRenew:
		i := record.ReaderPlace(cur, w.Reader.Ticket)
		cur.Readers[i].RVN = w.Reader.RVN
	case rows.ShareLeave:
		cur.Readers = slices.Delete(cur.Readers, record.ReaderPlace(cur, w.Reader.Ticket), record.ReaderPlace(cur, w.Reader.Ticket)+1)
	case rows.ShareEnd:
		cur.Readers, cur.Released, cur.Upgrader = nil, true, ""
	}
	switch {
	case w.Upgradeable && (w.Op == rows.ShareBegin || w.Op == rows.ShareTake || w.Op == rows.ShareJoin):
		cur.Upgrader = w.Reader.Ticket
	case w.Upgradeable && w.Op == rows.ShareLeave:
		cur.Upgrader = ""
	}
	cur.RVN, cur.RenewTime, cur.Expires = w.RVN, w.Time, w.Expires
	return cur
}

// withReader returns readers with r in ticket order, replacing an entry
// of its ticket.
func withReader(readers []rows.Reader, r rows.Reader) []rows.Reader {
	i, found := slices.BinarySearchFunc(readers, r.Ticket, func(e rows.Reader, t string) int { return strings.Compare(e.Ticket, t) })
	if found {
		readers[i] = r
		return readers
	}
	return slices.Insert(readers, i, r)
}
