//go:build !race

package testbin

// Race is whether this binary has the race detector.
const Race = false
