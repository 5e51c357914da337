package schedule

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/dynalease/dynalease/lock"
)

// State is a job as its lock's row records it.
type State struct {
	// Job is the job's name.
	Job string
	// Started is the last slot started, Attempt its last attempt; zero
	// when none.
	Started time.Time
	Attempt int
	// Finished is the last slot finished and Status how; zero and
	// Unfinished when none.
	Finished time.Time
	Status   Status
	// Holder is the instance that holds the job's lock (a run under way),
	// empty when it is free.
	Holder string
}

// List returns the state of every job whose lock row is in c's table under
// prefix (DefaultKeyPrefix when empty), by name. It reads the table with
// consistent scans (lock.Client.List).
func List(ctx context.Context, c *lock.Client, prefix string) ([]State, error) {
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	infos, err := c.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []State
	for _, info := range infos {
		name, ok := strings.CutPrefix(info.Key, prefix)
		if !ok || info.Err != nil {
			continue
		}
		led := ledgerOf(ledgered.Numbers(info))
		st := State{Job: name, Started: led.slot, Attempt: led.attempt, Finished: led.done, Status: led.outcome}
		if !info.Released {
			st.Holder = info.HolderIdentity
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	return out, nil
}
