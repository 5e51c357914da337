package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// microBenchmark is one parsed line of go test -bench output.
type microBenchmark struct {
	Package     string  `json:"package"`
	Name        string  `json:"name"`
	Iterations  int64   `json:"iterations"`
	NsPerOp     float64 `json:"ns_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
}

type microResult struct {
	Command    string           `json:"command"`
	DurationS  float64          `json:"duration_s"`
	Benchmarks []microBenchmark `json:"benchmarks"`
	Error      string           `json:"error,omitempty"`
	Output     string           `json:"failed_output,omitempty"`
}

var microPackages = []string{"./resourcelock/dynamodbstore/", "./lock/", "./election/"}

// rowMicro is row 7: the Go microbenchmarks, run by go test in a
// subprocess while DynamoDB Local is idle.
func (b *bench) rowMicro(ctx context.Context) error {
	args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", "1", "-benchtime", b.sc.MicroBenchtime}, microPackages...)
	res := &microResult{Command: "go " + strings.Join(args, " ")}
	b.res.Microbenchmarks = res
	b.progress("  %s", res.Command)
	cctx, cancel := context.WithTimeout(ctx, secs(b.sc.MicroTimeoutS))
	defer cancel()
	cmd := exec.CommandContext(cctx, "go", args...)
	cmd.Dir = b.root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	res.DurationS = round2(time.Since(start).Seconds())
	res.Benchmarks = parseBench(out.String())
	if err != nil {
		res.Error = err.Error()
		if cctx.Err() != nil {
			res.Error = fmt.Sprintf("timed out after %.0f s", b.sc.MicroTimeoutS)
		}
		res.Output = tail(out.String(), 4000)
		return fmt.Errorf("go test -bench: %s", res.Error)
	}
	if len(res.Benchmarks) == 0 {
		res.Output = tail(out.String(), 4000)
		return fmt.Errorf("go test -bench printed no benchmark")
	}
	return nil
}

// parseBench reads go test -bench -benchmem output.
func parseBench(out string) []microBenchmark {
	var res []microBenchmark
	pkg := ""
	s := bufio.NewScanner(strings.NewReader(out))
	for s.Scan() {
		line := s.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimPrefix(strings.TrimSpace(p), "github.com/dynalease/dynalease/")
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		mb := microBenchmark{Package: pkg, Name: f[0]}
		var err error
		if mb.Iterations, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, unit := f[i], f[i+1]
			switch unit {
			case "ns/op":
				mb.NsPerOp, _ = strconv.ParseFloat(v, 64)
			case "B/op":
				mb.BytesPerOp, _ = strconv.ParseInt(v, 10, 64)
			case "allocs/op":
				mb.AllocsPerOp, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		res = append(res, mb)
	}
	return res
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
