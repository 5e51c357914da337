// Command simcover prints, from the coverage profiles of the simulator's
// runs of each kind (make sim COVER=1), which share of the statements of
// the kernel's wait loop and of each kind's port the histories of each
// kind reached.
//
//	go run ./scripts/simcover cover-lock.out cover-set.out ...
//
// Each profile's kind is its file name's last part (cover-KIND.out).
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// files are the parts of the library the table shows: the kernel, then
// each kind's port and its own rules.
var files = []string{
	"internal/rvnlease/wait.go", "internal/rvnlease/acquire.go", "internal/rvnlease/queue.go",
	"internal/rvnlease/budget.go", "internal/rvnlease/hold.go", "internal/rvnlease/write.go",
	"internal/rvnlease/rhythm.go", "internal/rvnlease/renewer.go", "internal/rvnlease/validities.go",
	"internal/keylease/keylease.go", "internal/setlease/set.go", "internal/readlease/reader.go",
	"internal/readlease/upgrade.go", "internal/candidacy/candidacy.go", "election/stand.go",
	"election/handover.go", "election/lead.go", "lock/upgrade.go", "lock/semaphore.go", "schedule/scheduler.go",
}

// block is one block of a profile: its statements, and whether a run
// reached it.
type block struct {
	stmts int
	hit   bool
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: simcover cover-KIND.out ...")
		os.Exit(2)
	}
	var kinds []string
	cover := map[string]map[string]map[string]block{} // kind, file, block
	for _, path := range os.Args[1:] {
		kind := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "cover-"), ".out")
		kinds = append(kinds, kind)
		m, err := read(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "simcover:", err)
			os.Exit(1)
		}
		cover[kind] = m
	}
	fmt.Printf("%-34s", "statements reached")
	for _, k := range kinds {
		fmt.Printf(" %7s", k)
	}
	fmt.Printf(" %7s\n", "all")
	for _, f := range files {
		fmt.Printf("%-34s", f)
		all := map[string]block{}
		for _, k := range kinds {
			fmt.Printf(" %7s", share(cover[k][f]))
			for id, b := range cover[k][f] {
				if old, ok := all[id]; ok {
					b.hit = b.hit || old.hit
				}
				all[id] = b
			}
		}
		fmt.Printf(" %7s\n", share(all))
	}
}

// share returns the share of the statements of blocks that were reached.
func share(blocks map[string]block) string {
	total, hit := 0, 0
	for _, b := range blocks {
		total += b.stmts
		if b.hit {
			hit += b.stmts
		}
	}
	if total == 0 {
		return "-"
	}
	return strconv.Itoa(hit*100/total) + "%"
}

// read returns the blocks of a coverage profile by file (the path within
// the module) and block position.
func read(path string) (map[string]map[string]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]map[string]block{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		// github.com/dynalease/dynalease/FILE:POS NUMSTMTS COUNT
		fields := strings.Fields(line)
		if len(fields) != 3 {
			continue
		}
		file, pos, ok := strings.Cut(fields[0], ":")
		if !ok {
			continue
		}
		file = strings.TrimPrefix(file, "github.com/dynalease/dynalease/")
		stmts, _ := strconv.Atoi(fields[1])
		count, _ := strconv.Atoi(fields[2])
		if m[file] == nil {
			m[file] = map[string]block{}
		}
		b := m[file][pos]
		b.stmts = stmts
		b.hit = b.hit || count > 0
		m[file][pos] = b
	}
	return m, sc.Err()
}
