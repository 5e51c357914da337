package rvnlease

import "time"

// MinMargin is the smallest room the library leaves between how long a
// holder counts its validity and how long others wait on its unchanged
// RVN: 1% of d (the validity of a term, the lease of a lock), and at
// least one millisecond. The safety argument needs lease > validity ·
// (1+ρ)² for a clock-rate drift ρ between hosts; 1% leaves room for ρ up
// to √1.01 − 1 ≈ 0.49%, fifty times what real clocks drift (about 1e-4).
// It is the floor of election.Config's LeaseDuration − RenewDeadline and
// of lock.Config.SafetyMargin.
func MinMargin(d time.Duration) time.Duration {
	return max(d/100, time.Millisecond)
}

// MinPeriod is the floor of every period and request timeout a kind of
// lock accepts (a refresh, heartbeat or retry period, a request timeout):
// a request to a network store takes milliseconds, and polling, renewing
// or giving up faster only turns a failing store into a busy loop of
// errors.
const MinPeriod = 10 * time.Millisecond
