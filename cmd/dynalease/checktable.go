package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/cobra"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/rows"
)

// tableReport is what check-table found of one table.
type tableReport struct {
	Table        string   `json:"table"`
	Role         string   `json:"role"` // "locks" or "fences"
	PartitionKey string   `json:"partition_key"`
	SortKey      string   `json:"sort_key,omitempty"`
	Kind         string   `json:"kind"`
	Regions      []string `json:"replica_regions,omitempty"`
	Witnesses    []string `json:"witness_regions,omitempty"`
	TTL          string   `json:"ttl"`
}

// checkReport is check-table's report.
type checkReport struct {
	Tables   []tableReport `json:"tables"`
	Rows     int           `json:"rows"`
	Held     int           `json:"held"`
	Released int           `json:"released"`
	Invalid  int           `json:"unreadable_rows"`
	Verdict  string        `json:"verdict"`
	Refused  bool          `json:"refused"`
}

func newCheckTable(c *common) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check-table",
		Short: "Print what dynalease finds of the lock table and the fence table, and whether it uses them",
		Long: `check-table describes the lock table and its fence table (key schema, TTL,
global table kind and replica regions, as DescribeTable and
DescribeTimeToLive report them), counts the locks it holds (held, released,
unreadable), and says whether dynalease uses the table: it refuses a global
table with eventual multi-Region consistency (MREC) unless
--single-writer-region, and on one with strong consistency (MRSC) it has no
guarded writes, sets of keys or TTL. It exits 69 when the table is refused or
cannot be read.`,
		Args: exactArgs(0, "usage: dynalease check-table"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 4*c.requestTimeout+time.Minute) // the scan pages too
			defer cancel()
			db, err := c.client(ctx)
			if err != nil {
				return err
			}
			rep, err := c.checkTable(ctx, db)
			if err != nil {
				return err
			}
			if asJSON {
				_ = json.NewEncoder(os.Stdout).Encode(rep)
			} else {
				printCheck(rep)
			}
			if rep.Refused {
				return exit(exitUnavailable, errors.New(rep.Verdict))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// checkTable gathers check-table's report.
func (c *common) checkTable(ctx context.Context, db *dynamodb.Client) (checkReport, error) {
	var rep checkReport
	tables := []struct{ name, role string }{{c.table, "locks"}}
	if !c.noFencing {
		tables = append(tables, struct{ name, role string }{c.fences(), "fences"})
	}
	var lockInfo dynamodbstore.TableInfo
	for _, t := range tables {
		dctx, cancel := context.WithTimeout(ctx, c.requestTimeout)
		info, err := dynamodbstore.DescribeLockTable(dctx, db, t.name)
		cancel()
		if err != nil {
			if t.role == "fences" && errors.As(err, new(*types.ResourceNotFoundException)) {
				rep.Tables = append(rep.Tables, tableReport{Table: t.name, Role: t.role, Kind: "missing (no fencing tokens until it is created)"})
				continue
			}
			return rep, classify(err)
		}
		if t.role == "locks" {
			lockInfo = info
		}
		tr := tableReport{Table: t.name, Role: t.role, PartitionKey: info.PartitionKeyAttribute, SortKey: info.SortKeyAttribute, Kind: info.Kind(),
			Regions: info.Regions, Witnesses: info.Witnesses, TTL: "unknown"}
		tctx, cancel := context.WithTimeout(ctx, c.requestTimeout)
		out, err := db.DescribeTimeToLive(tctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(t.name)})
		cancel()
		if err == nil && out.TimeToLiveDescription != nil {
			tr.TTL = strings.ToLower(string(out.TimeToLiveDescription.TimeToLiveStatus))
			if a := aws.ToString(out.TimeToLiveDescription.AttributeName); a != "" {
				tr.TTL += " (" + a + ")"
			}
		}
		rep.Tables = append(rep.Tables, tr)
		if info.Global() && !info.StronglyConsistent() && !c.singleWriter {
			rep.Refused = true
			rep.Verdict = fmt.Sprintf("refused: %s is a global table with eventual multi-Region consistency (replicas in %s); "+
				"conditional writes through two regions can both succeed. Use a single-region or MRSC table, or --single-writer-region "+
				"if every client writes through one region", t.name, strings.Join(info.Regions, ", "))
		}
	}
	if rep.Refused {
		return rep, nil
	}
	s, err := dynamodbstore.New(dynamodbstore.Config{Client: db, Table: c.table, RequestTimeout: c.requestTimeout, SingleWriterRegion: c.singleWriter,
		PartitionKeyAttribute: lockInfo.PartitionKeyAttribute, SortKeyAttribute: lockInfo.SortKeyAttribute})
	if err != nil {
		return rep, exit(exitUsage, err)
	}
	err = rows.MustOpen(s).Scan(ctx, "", func(it rows.Item, err error) error {
		rep.Rows++
		switch {
		case err != nil:
			rep.Invalid++
		case it.Released:
			rep.Released++
		default:
			rep.Held++
		}
		return nil
	})
	if err != nil {
		return rep, classify(err)
	}
	switch {
	case lockInfo.StronglyConsistent():
		rep.Verdict = "usable (MRSC): leases, elections and fencing tokens work; guarded writes, sets of keys, semaphores and TTL are refused (no transactions or TTL on MRSC)"
	case lockInfo.Global():
		rep.Verdict = "usable only because --single-writer-region states that every client writes through one region (MREC)"
	default:
		rep.Verdict = "usable"
	}
	return rep, nil
}

func printCheck(rep checkReport) {
	for _, t := range rep.Tables {
		fmt.Printf("%s table %s: %s", t.Role, t.Table, t.Kind)
		if t.PartitionKey != "" {
			fmt.Printf("; key %s", t.PartitionKey)
			if t.SortKey != "" {
				fmt.Printf(", sort key %s", t.SortKey)
			}
		}
		if len(t.Regions) > 0 {
			fmt.Printf("; replicas in %s", strings.Join(t.Regions, ", "))
		}
		if len(t.Witnesses) > 0 {
			fmt.Printf("; witness in %s", strings.Join(t.Witnesses, ", "))
		}
		if t.TTL != "" {
			fmt.Printf("; TTL %s", t.TTL)
		}
		fmt.Println()
	}
	if !rep.Refused {
		fmt.Printf("locks: %d rows, %d held, %d released, %d unreadable\n", rep.Rows, rep.Held, rep.Released, rep.Invalid)
	}
	fmt.Println(rep.Verdict)
}
