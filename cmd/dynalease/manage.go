package main

import (
	"github.com/go-logr/logr"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// store returns the table as a store: with the fence table
// when fences, logging to log (a skipped table check).
func (c *common) store(ctx context.Context, fences bool, log logr.Logger) (*dynamodbstore.Store, error) {
	db, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	cfg := dynamodbstore.Config{Client: db, Table: c.table, RequestTimeout: c.requestTimeout,
		SingleWriterRegion: c.singleWriter, SkipTableCheck: c.skipCheck, Logger: log}
	if fences {
		cfg.FenceTable = c.fences()
	}
	s, err := dynamodbstore.New(cfg)
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	return s, nil
}

func newRelease(c *common) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "release NAME --force",
		Short: "An operator's release of a stuck lock",
		Long: `release prints the lock NAME as it reads it, then marks it released with a
write conditioned on the holder and the record version it read: if the
holder renewed meanwhile, nothing is changed. The holder finds its lock
released by someone else at its next heartbeat. Refused without --force.`,
		Args: exactArgs(1, "usage: dynalease release NAME --force"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := c.store(ctx, false, logr.Discard())
			if err != nil {
				return err
			}
			key := resourcelock.Key{Partition: args[0]}
			it, err := rows.MustOpen(s).Get(ctx, key)
			if errors.Is(err, resourcelock.ErrNotFound) {
				return exit(1, fmt.Errorf("no lock %q in table %s", args[0], c.table))
			}
			if err != nil {
				return classify(err)
			}
			fmt.Printf("lock %s: owner %s, rvn %s, lease %v, released %v\n", args[0], it.HolderIdentity, it.RVN, it.LeaseDuration, it.Released)
			if it.Released {
				fmt.Println("already released")
				return nil
			}
			if !force {
				return exit(exitUsage, errors.New("not released: add --force to release it"))
			}
			rec := it.Record
			rec.RVN, rec.Released, rec.RenewTime = uuid.NewString(), true, time.Now()
			if _, err := rows.MustOpen(s).Update(ctx, key, resourcelock.Precondition{RVN: it.RVN, HolderIdentity: it.HolderIdentity}, rec, rows.WriteOptions{KeepData: true}); err != nil {
				if errors.Is(err, resourcelock.ErrConflict) {
					return exit(exitNotAcquired, fmt.Errorf("not released: the lock changed since it was read (renewed or taken); read it again"))
				}
				return classify(err)
			}
			fmt.Println("released")
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "really release it")
	return cmd
}

func newObserve(c *common) *cobra.Command {
	var (
		asJSON   bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "observe NAME",
		Short: "Print each change of the lock's holder as it is seen, until interrupted",
		Args:  exactArgs(1, "usage: dynalease observe NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval < 10*time.Millisecond {
				return exit(exitUsage, fmt.Errorf("--interval %v: want at least 10ms", interval))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			s, err := c.store(ctx, false, logr.Discard())
			if err != nil {
				return err
			}
			key := resourcelock.Key{Partition: args[0]}
			last := "\x00"
			for {
				it, err := rows.MustOpen(s).Get(ctx, key)
				now := time.Now()
				word, state := "", ""
				switch {
				case ctx.Err() != nil:
					return nil
				case errors.Is(err, resourcelock.ErrNotFound):
					word, state = "none", "none"
				case resourcelock.Permanent(err):
					return classify(err)
				case err != nil:
					// Transient (throttling, a timeout): say so once, keep
					// observing.
					word, state = "unknown", "unknown ("+err.Error()+")"
				case it.Released:
					word, state = "released", "released"
				default:
					word, state = "held", "held by "+it.HolderIdentity
				}
				if state != last {
					last = state
					if asJSON {
						_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"time": now.UTC().Format(time.RFC3339Nano), "name": args[0],
							"state": word, "owner": it.HolderIdentity, "rvn": it.RVN})
					} else {
						fmt.Printf("%s %s: %s\n", now.Format(time.RFC3339Nano), args[0], state)
					}
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON lines")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often to read the lock")
	return cmd
}
