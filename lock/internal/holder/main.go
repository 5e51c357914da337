// Command holder is the lock holder that the lock package's SIGSTOP test
// runs as a separate process, so that it can be paused for real with
// SIGSTOP while another client takes its lock over.
//
// It takes a fencing lock on DynamoDB (DynamoDB Local at DYNAMODB_ENDPOINT),
// heartbeats it in the background, and talks over stdin and stdout, one
// line at a time:
//
//	acquired <token>        the lock is held
//	(stdin: any line)       make the guarded write now
//	held <true|false>       what IsHeld said just before the write
//	in-flight               with -inflight: the write passed the lock's own
//	                        checks and its request is held back
//	(stdin: any line)       with -inflight: let the request go
//	answered <status>       with -inflight: the HTTP status DynamoDB
//	                        answered that request with
//	committed               the guarded write committed, or
//	refused: <error>        it did not
//	lost=<bool> guardlost=<bool>
//	                        errors.Is of that error with dynalease.ErrLost and
//	                        resourcelock.ErrGuardLost
//
// The guarded write puts the item -item into -data: {id, writer: owner,
// token}. With -inflight the request of the guarded write, once the lock
// has checked itself and handed it to the SDK, waits for a second stdin
// line and is then sent regardless of its context's deadline, as a request
// already on the wire when the process was paused would reach the server
// late.
//
// DynamoDB Local keeps separate tables per access key and region: the
// client uses AWS_ACCESS_KEY_ID and AWS_REGION when set ("local" and
// us-east-1 otherwise), so that it sees the tables its test made.
//
// Errors of the setup go to stderr with exit status 1.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

func main() {
	var (
		table     = flag.String("table", "", "lock table")
		fences    = flag.String("fences", "", "fence table")
		data      = flag.String("data", "", "application table (partition key id)")
		key       = flag.String("key", "", "lock key")
		item      = flag.String("item", "", "id of the item the guarded write puts")
		owner     = flag.String("owner", "", "owner name")
		lease     = flag.Duration("lease", time.Second, "lease duration")
		heartbeat = flag.Duration("heartbeat", 200*time.Millisecond, "heartbeat period")
		inflight  = flag.Bool("inflight", false, "hold the guarded write's request until a second stdin line")
	)
	flag.Parse()
	endpoint := os.Getenv("DYNAMODB_ENDPOINT")
	if endpoint == "" || *table == "" || *fences == "" || *data == "" || *key == "" || *item == "" || *owner == "" {
		fatal(errors.New("DYNAMODB_ENDPOINT and every flag but -lease, -heartbeat and -inflight are required"))
	}

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() {
		if _, ok := <-lines; !ok {
			fatal(errors.New("stdin closed"))
		}
	}

	hc := &gate{base: &http.Client{}, next: next}
	hc.hold.Store(*inflight)
	client := dynamodb.New(dynamodb.Options{
		Region:       envOr("AWS_REGION", "us-east-1"),
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(envOr("AWS_ACCESS_KEY_ID", "local"), "local", ""),
		HTTPClient:   hc,
	}, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true // DynamoDB Local only
	})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: client, Table: *table, FenceTable: *fences})
	if err != nil {
		fatal(err)
	}
	lc, err := lock.New(lock.Config{Store: store, Identity: *owner, Fencing: true, LeaseDuration: *lease, HeartbeatPeriod: *heartbeat})
	if err != nil {
		fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := lc.Acquire(ctx, *key)
	if err != nil {
		fatal(err)
	}
	say("acquired %d", l.Token())

	next()
	say("held %t", l.IsHeld())
	err = l.Guard(ctx, store.Writes(types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(*data),
		Item: map[string]types.AttributeValue{
			"id":     &types.AttributeValueMemberS{Value: *item},
			"writer": &types.AttributeValueMemberS{Value: *owner},
			"token":  &types.AttributeValueMemberN{Value: strconv.FormatInt(l.Token(), 10)},
		},
	}}))
	if err == nil {
		say("committed")
	} else {
		say("refused: %v", err)
	}
	say("lost=%t guardlost=%t", errors.Is(err, dynalease.ErrLost), errors.Is(err, resourcelock.ErrGuardLost))
	_ = lc.Close(context.Background())
}

// gate is the SDK's HTTP client. With hold, it announces the first
// TransactWriteItems request, waits for next, and sends it detached from
// its context.
type gate struct {
	base *http.Client
	hold atomic.Bool
	next func()
}

func (g *gate) Do(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-Amz-Target") == "DynamoDB_20120810.TransactWriteItems" && g.hold.CompareAndSwap(true, false) {
		say("in-flight")
		g.next()
		resp, err := g.base.Do(req.WithContext(context.WithoutCancel(req.Context())))
		if err != nil {
			say("answered: %v", err)
		} else {
			say("answered %d", resp.StatusCode)
		}
		return resp, err
	}
	return g.base.Do(req)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func say(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "holder:", err)
	os.Exit(1)
}
