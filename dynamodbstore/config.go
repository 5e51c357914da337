package dynamodbstore

import (
	"fmt"

	"github.com/dynalease/dynalease"
)

// CanFence reports whether Fence can work: whether a FenceTable is
// configured.
func (d *rowStore) CanFence() bool { return d.fenceTable != "" }

// badConfig returns the error of a configuration field.
func badConfig(field, format string, args ...any) error {
	return &dynalease.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
