//go:build !dynalease_chaos_broken_term

package election

// chaosBrokenTerm is true only in the deliberately broken build (tag
// dynalease_chaos_broken_term) with which make chaos proves that its
// checker catches a leader that keeps its term past RenewDeadline.
const chaosBrokenTerm = false
