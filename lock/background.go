package lock

import "context"

// background is a lock as the client's rvnlease.Renewer renews it.
type background struct{ l *Lock }

// Renew sends one heartbeat; a failure is logged (the lock itself records
// a loss or an unconfirmed renewal).
func (b background) Renew() {
	l := b.l
	if err := l.heartbeat(context.Background(), heartbeatConfig{}); err != nil {
		l.c.log.V(1).Info("heartbeat failed", "key", l.lease.Key().String(), "error", err.Error())
	}
}

// Ended reports whether the lock has ended.
func (b background) Ended() bool {
	b.l.mu.Lock()
	defer b.l.mu.Unlock()
	return b.l.errLocked() != nil
}
