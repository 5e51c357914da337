//go:build !dynalease_chaos_broken_guard

package dynamodbstore

// chaosBrokenGuard is true only in the deliberately broken build (tag
// dynalease_chaos_broken_guard) with which make chaos proves that its
// checker catches a guarded write committed by a holder that lost its lock.
const chaosBrokenGuard = false
