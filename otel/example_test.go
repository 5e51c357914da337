package dynaotel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/memorystore"
)

// A service's trace, printed by the stdout exporter: the request's span,
// and under it the wait for the customer's lock, the work done under the
// lock and its release. (The exporter's JSON is folded into a tree here,
// without its IDs and times, so that the output is the same every run.)
func Example() {
	var out bytes.Buffer
	exp, _ := stdouttrace.New(stdouttrace.WithWriter(&out))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx := context.Background()

	locks, _ := lock.New(lock.Config{Store: memorystore.New(), Identity: "orders-1", TracerProvider: tp})
	defer locks.Close(ctx)

	// The service's handler, under its request's span.
	ctx, request := tp.Tracer("orders").Start(ctx, "POST /orders")
	l, err := locks.Acquire(ctx, "customer-42")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, work := tp.Tracer("orders").Start(ctx, "charge customer-42")
	work.End()
	_ = l.Release(ctx)
	request.End()
	_ = tp.Shutdown(context.Background())

	printTree(&out)
	// Output:
	// POST /orders
	//   dynalease.lock.acquire dynalease.lock.key=customer-42 dynalease.outcome=acquired
	//   charge customer-42
	//   dynalease.lock.release dynalease.lock.key=customer-42 dynalease.outcome=released
}

// printTree prints the spans the stdout exporter wrote to r as a tree,
// children in the order they started, with two attributes of each.
func printTree(r io.Reader) {
	type span struct {
		Name        string
		SpanContext struct{ SpanID string }
		Parent      struct{ SpanID string }
		Attributes  []struct {
			Key   string
			Value struct{ Value any }
		}
		StartTime string
	}
	var spans []span
	for dec := json.NewDecoder(r); dec.More(); {
		var s span
		if dec.Decode(&s) != nil {
			return
		}
		spans = append(spans, s)
	}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		var children []span
		for _, s := range spans {
			if s.Parent.SpanID == parent || (depth == 0 && strings.Trim(s.Parent.SpanID, "0") == "") {
				children = append(children, s)
			}
		}
		for i := 1; i < len(children); i++ { // by start time
			for j := i; j > 0 && children[j].StartTime < children[j-1].StartTime; j-- {
				children[j], children[j-1] = children[j-1], children[j]
			}
		}
		for _, s := range children {
			line := strings.Repeat("  ", depth) + s.Name
			for _, a := range s.Attributes {
				if a.Key == "dynalease.lock.key" || a.Key == "dynalease.outcome" {
					line += fmt.Sprintf(" %s=%v", a.Key, a.Value.Value)
				}
			}
			fmt.Println(line)
			walk(s.SpanContext.SpanID, depth+1)
		}
	}
	walk("", 0)
}

// The AWS SDK's own spans join the library's: instrument the SDK's client
// with the same TracerProvider (here with the contrib otelaws
// middleware), and each DynamoDB request of an Acquire is a child of its
// dynalease.lock.acquire span, since the library sends its requests under
// that span's context. It needs AWS credentials, so it is compiled but
// not run.
func Example_withTheAWSSDK() {
	ctx := context.Background()
	tp := sdktrace.NewTracerProvider() // and an exporter: OTLP, stdout, …
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	otelaws.AppendMiddlewares(&awsCfg.APIOptions, otelaws.WithTracerProvider(tp))
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: dynamodb.NewFromConfig(awsCfg), Table: "locks"})
	if err != nil {
		fmt.Println(err)
		return
	}
	locks, err := lock.New(lock.Config{Store: store, TracerProvider: tp})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locks.Close(ctx)
	// locks.Acquire(ctx, …): POST /orders → dynalease.lock.acquire → DynamoDB.UpdateItem
}
