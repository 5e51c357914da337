//go:build dynalease_chaos_broken_term

package election

// chaosBrokenTerm: this build is deliberately broken (see
// chaos_broken_off.go). Never ship it.
const chaosBrokenTerm = true
