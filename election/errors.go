package election

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is matched by every error New returns for a bad Config;
// errors.As with *ConfigError tells which field.
var ErrInvalidConfig = errors.New("election: invalid config")

// ErrLostLeadership is returned by Run when a term ended without the caller
// asking: the renewal deadline passed without a confirmed renewal, or the
// record was found taken, released or deleted by someone else.
var ErrLostLeadership = errors.New("election: leadership lost")

// ErrRunning is returned by Run when another Run of the same Elector has not
// returned yet.
var ErrRunning = errors.New("election: Run is already running")

// ConfigError names the Config field that failed validation.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("election: invalid config: %s %s", e.Field, e.Reason)
}

// Is makes every ConfigError match ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }
