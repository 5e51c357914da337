package election

import "sync"

// notifier delivers OnNewLeader calls in order from one goroutine, so a
// slow callback never blocks the election loop. Reports queue without
// bound; each is one identity string.
type notifier struct {
	fn func(string)

	mu      sync.Mutex
	queue   []string
	running bool
}

func (n *notifier) report(identity string) {
	if n.fn == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queue = append(n.queue, identity)
	if !n.running {
		n.running = true
		go n.deliver()
	}
}

func (n *notifier) deliver() {
	for {
		n.mu.Lock()
		if len(n.queue) == 0 {
			n.running = false
			n.mu.Unlock()
			return
		}
		id := n.queue[0]
		n.queue = n.queue[1:]
		n.mu.Unlock()
		n.fn(id)
	}
}
