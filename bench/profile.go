package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts the CPU profile and turns on the mutex and block
// profiles when BENCH_PROFILE names a directory, and returns the function
// that writes them there (cpu.pprof, mutex.pprof, block.pprof,
// heap.pprof) at the end of the run. With BENCH_ROWS=1 the profiles are
// those of rows 1 and 3: the raw SDK's cycles and the lock's, interleaved
// (`go tool pprof -focus` tells them apart).
func startProfiles() (stop func() error, err error) {
	dir := os.Getenv("BENCH_PROFILE")
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, err
	}
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(10_000) // one blocking event per 10 µs blocked, on average
	return func() error {
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			return err
		}
		for _, name := range []string{"mutex", "block", "heap"} {
			f, err := os.Create(filepath.Join(dir, name+".pprof"))
			if err != nil {
				return err
			}
			werr := pprof.Lookup(name).WriteTo(f, 0)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return fmt.Errorf("%s profile: %w", name, werr)
			}
		}
		fmt.Fprintf(os.Stderr, "bench: profiles in %s\n", dir)
		return nil
	}, nil
}
