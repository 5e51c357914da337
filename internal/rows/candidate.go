package rows

// MaxCandidates is the most entries a row's candidates hold: a Stand that
// would add one more is refused. An entry takes about 150 bytes, so that
// a full row stays a few kilobytes (every write of the row is charged by
// its size).
const MaxCandidates = 50

// Candidate is one entry of a row's candidates: a client standing for
// election on the row (see Store.Stand), with its priority.
//
// An entry is advice: no entry, and no read of one, gives anybody a hold,
// and writing one changes neither the row's record nor its RVN. A leader
// reads the entries to find a live candidate to hand its lease to; an
// entry is live while its RVN keeps changing, as timed on the reader's own
// clock.
type Candidate struct {
	// Ticket names this one candidacy: a fresh unique string (a UUID).
	Ticket string
	// Identity is the candidate's holder identity.
	Identity string
	// Priority is the candidate's priority: higher leads.
	Priority int64
	// RVN is the entry's record version number, fresh on each write of
	// the entry.
	RVN string
}
