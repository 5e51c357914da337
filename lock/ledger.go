package lock

import "github.com/dynalease/dynalease/internal/ledger"

// The options of a scheduled job's ledger (internal/ledger), for package
// schedule alone.
func init() {
	ledger.Register(ledger.Options[AcquireOption, ReleaseOption, Info, *Client]{
		Take: takeLedger, Close: closeLedger,
		Numbers: func(i Info) map[string]int64 { return i.numbers },
		Refused: refusedNumbers,
		Timing: func(c *Client) ledger.Timing {
			return ledger.Timing{Lease: c.cfg.lease, Refresh: c.cfg.refresh, TTL: c.cfg.ttlSlack}
		},
	})
}

// takeLedger is ledger.Options.Take: the taking write sets numbers and is
// admitted only while each integer below names is missing or below its
// bound. Such an acquisition
// does not join the row's queue, even on a fair client: it polls as an
// Unfair client's does, since a hand-over to it could only be refused by
// its bound. The row a failed fence or an abandoned write in doubt
// released keeps the numbers the write set, so a retry of the same bound
// is refused with ledger.ErrNotBelow: the ledger then shows an
// acquisition that never ran, which package schedule settles by policy.
// Refused (dynalease.ErrInvalid) on sets, permits, reentrant acquisitions,
// Get, and a client with a TTL (DynamoDB would delete the numbers with
// the row).
func takeLedger(numbers, below map[string]int64) AcquireOption {
	return func(a *acquireConfig) { a.numbers, a.below = numbers, below }
}

// closeLedger is ledger.Options.Close: the release sets numbers on the
// row it keeps (a lock on one key, not deleted on release).
func closeLedger(numbers map[string]int64) ReleaseOption {
	return func(r *releaseConfig) { r.numbers = numbers }
}
