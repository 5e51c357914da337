package main

import (
	"sort"
	"strings"

	"github.com/go-logr/logr"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// lockJSON is a lock row for scripts.
type lockJSON struct {
	Name         string          `json:"name"`
	SortKey      string          `json:"sort_key,omitempty"`
	Owner        string          `json:"owner"`
	Readers      []string        `json:"readers,omitempty"`
	Candidates   []candidateJSON `json:"candidates,omitempty"`
	RVN          string          `json:"rvn"`
	LeaseMillis  int64           `json:"lease_ms"`
	Released     bool            `json:"released"`
	Acquisitions int64           `json:"acquisitions"`
	Token        int64           `json:"token,omitempty"`
	RenewTime    string          `json:"renew_time,omitempty"`
	Data         string          `json:"data,omitempty"`
	Error        string          `json:"error,omitempty"`
}

// candidateJSON is a candidate for election standing on a row.
type candidateJSON struct {
	Identity string `json:"identity"`
	Priority int64  `json:"priority"`
}

func toJSON(in lock.Info) lockJSON {
	out := lockJSON{Name: in.Key, SortKey: in.SortKey, Owner: in.HolderIdentity, Readers: in.Readers, RVN: in.RVN,
		LeaseMillis: in.LeaseDuration.Milliseconds(), Released: in.Released, Acquisitions: in.Acquisitions, Data: string(in.Data),
		Token: in.Token}
	for _, id := range byPriority(in.Candidates) {
		out.Candidates = append(out.Candidates, candidateJSON{Identity: id, Priority: in.Candidates[id]})
	}
	if !in.RenewTime.IsZero() {
		out.RenewTime = in.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	if in.Err != nil {
		out.Error = in.Err.Error()
	}
	return out
}

// readClient is a lock client for reading: no heartbeats are ever due.
func (c *common) readClient(ctx context.Context) (*lock.Client, error) {
	store, err := c.store(ctx, false, logr.Discard())
	if err != nil {
		return nil, err
	}
	lc, err := lock.New(lock.Config{Store: store, ManualHeartbeats: true, RequestTimeout: c.requestTimeout})
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	return lc, nil
}

func newGet(c *common) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show the lock NAME without taking it",
		Args:  exactArgs(1, "usage: dynalease get NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			lc, err := c.readClient(ctx)
			if err != nil {
				return err
			}
			info, err := lc.Get(ctx, args[0])
			if errors.Is(err, resourcelock.ErrNotFound) {
				return exit(1, fmt.Errorf("no lock %q in table %s", args[0], c.table))
			}
			if err != nil {
				return classify(err)
			}
			return print([]lock.Info{info}, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newList(c *common) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every lock of the table",
		Args:  exactArgs(0, "usage: dynalease list"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			lc, err := c.readClient(ctx)
			if err != nil {
				return err
			}
			infos, err := lc.List(ctx, "")
			if err != nil {
				return classify(err)
			}
			return print(infos, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON array")
	return cmd
}

func print(infos []lock.Info, asJSON bool) error {
	if asJSON {
		out := make([]lockJSON, 0, len(infos))
		for _, in := range infos {
			out = append(out, toJSON(in))
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tOWNER\tLEASE\tRELEASED\tTOKEN\tLAST WRITE (writer's clock)\tRVN\tDATA")
	for _, in := range infos {
		if in.Err != nil {
			fmt.Fprintf(w, "%s\t(unreadable: %v)\t\t\t\t\t\t\n", in.Key, in.Err)
			continue
		}
		last := "-"
		if !in.RenewTime.IsZero() {
			last = time.Since(in.RenewTime).Round(time.Millisecond).String() + " ago"
		}
		owner := in.HolderIdentity
		if len(in.Readers) > 0 {
			owner = fmt.Sprintf("%d readers: %s", len(in.Readers), strings.Join(in.Readers, ", "))
		}
		if len(in.Candidates) > 0 {
			cands := make([]string, 0, len(in.Candidates))
			for _, id := range byPriority(in.Candidates) {
				cands = append(cands, fmt.Sprintf("%s (priority %d)", id, in.Candidates[id]))
			}
			owner += "; candidates: " + strings.Join(cands, ", ")
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%d\t%s\t%s\t%q\n", in.Key, owner, in.LeaseDuration, in.Released, in.Token, last, in.RVN, in.Data)
	}
	return w.Flush()
}

func exactArgs(n int, usage string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return exit(exitUsage, errors.New(usage))
		}
		return nil
	}
}

func newCreateTable(c *common) *cobra.Command {
	var ttl bool
	cmd := &cobra.Command{
		Use:   "create-table",
		Short: "Create the lock table and the fence table (idempotent)",
		Long: `create-table creates the lock table (and, unless --no-fencing, the fence
table) on demand, waits until they are active and, with --ttl, enables TTL on
the lock table. It succeeds without change on tables that exist with the
right key schema, and fails (exit 69) on a table of another schema.`,
		Args: exactArgs(0, "usage: dynalease create-table"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			db, err := c.client(ctx)
			if err != nil {
				return err
			}
			opts := dynamodbstore.TableOptions{}
			if ttl {
				opts.TTLAttribute = dynamodbstore.DefaultTTLAttribute
			}
			if err := dynamodbstore.CreateTable(ctx, db, c.table, opts); err != nil {
				return classify(err)
			}
			if !c.noFencing {
				if err := dynamodbstore.CreateTable(ctx, db, c.fences(), dynamodbstore.TableOptions{}); err != nil {
					return classify(err)
				}
			}
			fmt.Println("ok")
			return nil
		},
	}
	cmd.Flags().BoolVar(&ttl, "ttl", false, "enable TTL on the lock table's ttl attribute")
	return cmd
}

// byPriority returns the identities of cands, the highest priority first
// (ties by identity).
func byPriority(cands map[string]int64) []string {
	ids := make([]string, 0, len(cands))
	for id := range cands {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if cands[ids[i]] != cands[ids[j]] {
			return cands[ids[i]] > cands[ids[j]]
		}
		return ids[i] < ids[j]
	})
	return ids
}
