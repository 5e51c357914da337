package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynalease/dynalease/schedule"
)

func newJobs(c *common) *cobra.Command {
	return &cobra.Command{
		Use:   "jobs",
		Short: "List the scheduled jobs of the table (dynalease cron, package schedule) with their last slots",
		Args:  exactArgs(0, "usage: dynalease jobs"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			lc, err := c.readClient(ctx)
			if err != nil {
				return err
			}
			states, err := schedule.List(ctx, lc, "")
			if err != nil {
				return classify(err)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "JOB\tLAST STARTED\tATTEMPT\tLAST FINISHED\tOUTCOME\tRUNNING ON")
			for _, s := range states {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", s.Job, stamp(s.Started), s.Attempt, stamp(s.Finished), s.Status, s.Holder)
			}
			return w.Flush()
		},
	}
}

// stamp formats a slot, or "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
