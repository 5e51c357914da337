package lock

import "github.com/google/uuid"

// rowID is an RVN or an acquisition ID as a held lock keeps it: the 16
// bytes of a UUID, for a string in the form uuid.UUID.String writes
// (lower-case, with hyphens), which every RVN and acquisition ID of this
// library is. A 36-byte string would cost a 48-byte allocation of its own
// in each of thousands of held locks, twice once the first heartbeat has
// moved the RVN away from the acquisition ID. Any other string (written by
// another library, or empty) does not fit: the lock keeps it in its
// extras instead (see Lock.setIDsLocked).
type rowID = uuid.UUID

// parseRowID returns s as a rowID, and false when s is not in the form
// rowID.String writes back unchanged.
func parseRowID(s string) (rowID, bool) {
	if len(s) != 36 {
		return rowID{}, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'F' {
			return rowID{}, false // uuid.Parse takes it; String would not write it back
		}
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}

// setIDsLocked sets r's rvn and acquisitionID, compactly when they fit,
// and marks the lock for those that do not, keeping them in its extras.
// It reports whether acquisitionID is the one of the row the lock kept
// before (l.row, under the marks as they were).
func (l *Lock) setIDsLocked(r *heldRow, rvn, acquisitionID string) (sameAcquisition bool) {
	var ok bool
	if r.acquisitionID, ok = parseRowID(acquisitionID); ok {
		sameAcquisition = l.marks&foreignAcquisition == 0 && r.acquisitionID == l.row.acquisitionID
	} else {
		sameAcquisition = l.marks&foreignAcquisition != 0 && l.x.acquisitionID == acquisitionID
	}
	l.marks &^= foreignRVN | foreignAcquisition
	if l.x != nil {
		l.x.rvn, l.x.acquisitionID = "", "" // set again below when still foreign
	}
	if !ok {
		l.marks |= foreignAcquisition
		l.extrasLocked().acquisitionID = acquisitionID
	}
	if r.rvn, ok = parseRowID(rvn); !ok {
		l.marks |= foreignRVN
		l.extrasLocked().rvn = rvn
	}
	return sameAcquisition
}

// rvnLocked returns the RVN of the row as last confirmed.
func (l *Lock) rvnLocked() string {
	if l.marks&foreignRVN != 0 {
		return l.x.rvn
	}
	return l.row.rvn.String()
}

// acquisitionIDLocked returns the acquisition ID of the row as last
// confirmed.
func (l *Lock) acquisitionIDLocked() string {
	if l.marks&foreignAcquisition != 0 {
		return l.x.acquisitionID
	}
	return l.row.acquisitionID.String()
}
