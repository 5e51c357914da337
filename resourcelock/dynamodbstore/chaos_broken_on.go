//go:build dynalease_chaos_broken_guard

package dynamodbstore

// chaosBrokenGuard: this build is deliberately broken (see
// chaos_broken_off.go). Never ship it.
const chaosBrokenGuard = true
