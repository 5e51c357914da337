package rows

import "github.com/dynalease/dynalease/resourcelock"

// Fencing tokens pack (generation, counter) into one integer: generation
// in the high 31 bits, counter in the low 32.
const (
	counterBits = 32
	// maxFenceCounter is the largest counter a token can carry; an
	// acquisition that reaches it starts a new generation.
	maxFenceCounter = 1<<counterBits - 1
	// MaxFenceGeneration is the largest generation a fencing token can
	// carry.
	MaxFenceGeneration = 1<<(63-counterBits) - 1
)

// Token returns rec's fencing token, or 0 when it has none (no generation
// yet, or a counter that needs a new one). Tokens of one key compare like
// the acquisitions that issued them: a later acquisition has a larger
// token. A token is FenceGeneration in its high 31 bits and Acquisitions
// in its low 32.
func Token(rec resourcelock.Record) int64 {
	if NeedsFence(rec) {
		return 0
	}
	return rec.FenceGeneration<<counterBits | rec.Acquisitions
}

// NeedsFence reports whether the row needs a new fencing generation before
// its holder can have a token: it has none, its counter was just started
// (the row is new, or was rewritten without dynalease's attributes), or the
// counter is full.
func NeedsFence(rec resourcelock.Record) bool {
	return rec.FenceGeneration <= 0 || rec.FenceGeneration > MaxFenceGeneration ||
		rec.Acquisitions <= 1 || rec.Acquisitions > maxFenceCounter
}

// Token returns the row's fencing token (see the function Token).
func (it Item) Token() int64 { return Token(it.Record) }
