package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/lock"
)

// common holds the flags every command shares.
type common struct {
	table, fenceTable, endpoint, region, owner, logLevel string
	metricsAddr                                          string
	otel                                                 string     // --otel: "", otelFromEnv or a URL
	tel                                                  *telemetry // made before the command runs; nil: none
	lease, heartbeat, requestTimeout                     time.Duration
	noFencing                                            bool
	unfair                                               bool // run: lock.Config.Unfair
	singleWriter                                         bool // SingleWriterRegion
	skipCheck                                            bool // SkipTableCheck
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

func newRoot() *cobra.Command { return (&common{}).root() }

// root is the command line, its flags bound to c.
func (c *common) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "dynalease",
		Short: "Run a command only while holding a DynamoDB lock; inspect and manage locks",
		Long: `dynalease runs a command only while it holds a lock on a DynamoDB table, and
stops the command's whole process group when the lock is lost, before anyone
else may take the lock over. It also reads, lists, force-releases locks and
creates the lock table. Locks are wire-compatible with the AWS Java DynamoDB
Lock Client.

AWS credentials and region come from the SDK's standard chain (environment,
AWS_PROFILE, instance or pod role). Flags fall back to the environment
variables named in their help.

Exit codes: the command's own when it ran; 1 no such lock (get, release);
64 usage error; 69 DynamoDB unreachable, or the table missing, of another
schema, or refused (check-table: a global table with eventual consistency); 73 lock not acquired (run), or changed before release --force could
write; 74 lock lost while the command ran.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			c.tel, err = c.telemetry(cmd.Context(), cmd.Annotations[servesMetrics] != "")
			return err
		},
	}
	f := root.PersistentFlags()
	f.StringVar(&c.table, "table", envOr("DYNALEASE_TABLE", "dynalease-locks"), "lock table (DYNALEASE_TABLE)")
	f.StringVar(&c.fenceTable, "fence-table", envOr("DYNALEASE_FENCE_TABLE", ""), "fencing table; TABLE-fences when empty (DYNALEASE_FENCE_TABLE)")
	f.BoolVar(&c.noFencing, "no-fencing", false, "no fencing token (DYNALEASE_TOKEN stays unset)")
	f.BoolVar(&c.singleWriter, "single-writer-region", false, "accept a global table with eventual multi-Region consistency (MREC): you state that every client of it writes through one region, which dynalease cannot check")
	f.BoolVar(&c.skipCheck, "skip-table-check", false, "do not describe the table before use (for credentials without dynamodb:DescribeTable): a global table with eventual multi-Region consistency (MREC) is then not refused")
	f.StringVar(&c.endpoint, "endpoint", envOr("DYNALEASE_ENDPOINT", os.Getenv("DYNAMODB_ENDPOINT")), "DynamoDB endpoint URL, e.g. DynamoDB Local (DYNALEASE_ENDPOINT, DYNAMODB_ENDPOINT)")
	f.StringVar(&c.region, "region", envOr("DYNALEASE_REGION", ""), "AWS region; the SDK's when empty (DYNALEASE_REGION)")
	f.StringVar(&c.owner, "owner", envOr("DYNALEASE_OWNER", ""), "owner name written into locks, unique per process; host name and a UUID when empty (DYNALEASE_OWNER, which run and elect do not pass on to their command)")
	f.DurationVar(&c.lease, "lease", envDuration("DYNALEASE_LEASE", lock.DefaultLeaseDuration), "lease duration (DYNALEASE_LEASE)")
	f.DurationVar(&c.heartbeat, "heartbeat", envDuration("DYNALEASE_HEARTBEAT", 0), "heartbeat period of run; lease/4 when 0 (elect renews every --retry) (DYNALEASE_HEARTBEAT)")
	f.DurationVar(&c.requestTimeout, "request-timeout", envDuration("DYNALEASE_REQUEST_TIMEOUT", 2*time.Second), "bound on each request (DYNALEASE_REQUEST_TIMEOUT)")
	f.StringVar(&c.metricsAddr, "metrics-addr", envOr("DYNALEASE_METRICS_ADDR", ""), "for run, elect and cron: serve /metrics, /healthz and /readyz here, e.g. :9090 (DYNALEASE_METRICS_ADDR)")
	f.StringVar(&c.otel, "otel", "", "--otel=URL: send traces and metrics by OTLP over HTTP to the collector at URL, e.g. http://localhost:4318; --otel alone, or OTEL_EXPORTER_OTLP_ENDPOINT set, takes the endpoint from the standard OTEL_* environment, which sets the rest (headers, service name, sampler)")
	f.Lookup("otel").NoOptDefVal = otelFromEnv
	f.StringVar(&c.logLevel, "log-level", envOr("DYNALEASE_LOG_LEVEL", "error"), "error, info or debug (DYNALEASE_LOG_LEVEL)")
	root.AddCommand(newRun(c), newCron(c), newJobs(c), newElect(c), newGet(c), newList(c), newObserve(c), newRelease(c), newCreateTable(c), newCheckTable(c))
	return root
}

// client returns a DynamoDB client from the SDK's default chain.
func (c *common) client(ctx context.Context) (*dynamodb.Client, error) {
	var opts []func(*config.LoadOptions) error
	if c.region != "" {
		opts = append(opts, config.WithRegion(c.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, exit(exitUnavailable, fmt.Errorf("AWS configuration: %w", err))
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // only an emulator may do without one
		if c.endpoint == "" {
			return nil, exit(exitUsage, errors.New("no AWS region: set --region, DYNALEASE_REGION or AWS_REGION"))
		}
	}
	if tp := c.tel.tracerProvider(); tp != nil {
		// The SDK's own spans, one per request, under the library's.
		otelaws.AppendMiddlewares(&cfg.APIOptions, otelaws.WithTracerProvider(tp))
	}
	hook := describeTableHook()
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if hook != nil {
			o.HTTPClient = &http.Client{Transport: hook}
		}
		if c.endpoint != "" {
			o.BaseEndpoint = aws.String(c.endpoint)
			// DynamoDB Local omits the response checksum on errors.
			o.DisableValidateResponseChecksum = true
		}
	}), nil
}

func (c *common) logger() (logr.Logger, error) {
	v := map[string]int{"error": -1, "info": 0, "debug": 1}
	level, ok := v[c.logLevel]
	if !ok {
		return logr.Discard(), exit(exitUsage, fmt.Errorf("--log-level %q: want error, info or debug", c.logLevel))
	}
	l := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "dynalease:", prefix, args) },
		funcr.Options{Verbosity: max(level, 0)})
	if level < 0 {
		return logr.New(errorsOnly{l.GetSink()}), nil
	}
	return l, nil
}

// errorsOnly passes on errors and drops information.
type errorsOnly struct{ logr.LogSink }

func (errorsOnly) Enabled(int) bool { return false }
func (e errorsOnly) WithValues(kv ...any) logr.LogSink {
	return errorsOnly{e.LogSink.WithValues(kv...)}
}
func (e errorsOnly) WithName(name string) logr.LogSink { return errorsOnly{e.LogSink.WithName(name)} }

func (c *common) fences() string {
	if c.fenceTable != "" {
		return c.fenceTable
	}
	return c.table + "-fences"
}

// classify gives a library error its exit code.
func classify(err error) error {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.Is(err, dynalease.ErrInvalid):
		return exit(exitUsage, err)
	case errors.Is(err, lock.ErrLocked):
		return exit(exitNotAcquired, err)
	default:
		return exit(exitUnavailable, err) // table missing, schema, network, access
	}
}
