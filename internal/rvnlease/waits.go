package rvnlease

import "sync"

// Waits are the tickets of the queued waits under way of one holder
// identity (one kernel's): a client may wait for one key several times at
// once (shared holds, an upgrade beside a queued writer), so its entries
// in a queue are told apart by ticket. An entry of the identity whose
// ticket is not here is an earlier wait's, whose Leave failed or whose
// process restarted: stale. It is safe for concurrent use; the zero value
// is ready.
type Waits struct {
	mu   sync.Mutex
	live map[string]struct{}
}

// add notes the queued wait of ticket as under way.
func (ws *Waits) add(ticket string) {
	if ws == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.live == nil {
		ws.live = map[string]struct{}{}
	}
	ws.live[ticket] = struct{}{}
}

// remove notes that the wait of ticket has ended.
func (ws *Waits) remove(ticket string) {
	if ws == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.live, ticket)
}

// Live reports whether ticket names a queued wait under way of this
// identity's.
func (ws *Waits) Live(ticket string) bool {
	if ws == nil || ticket == "" {
		return false
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	_, ok := ws.live[ticket]
	return ok
}
