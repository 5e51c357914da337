// Package testbin builds the programs that tests run as processes of their
// own: the command, the chaos workers, a lock holder to stop and continue.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Build builds the main package pkg (an import path, or a directory such
// as ".") into the file path with go build and the further flags extra.
// When the calling test binary has the race detector, so does the
// program: its races are reported too, and the build takes every package
// the test already compiled from the build cache instead of compiling
// them again, which on an empty cache is most of the build's time. env is
// added to the build's environment. The error of a failed build holds
// go's output.
func Build(path, pkg string, env []string, extra ...string) error {
	goBin, err := exec.LookPath("go") // go test puts its own first on PATH
	if err != nil {
		return err
	}
	args := []string{"build", "-o", path}
	if Race {
		args = append(args, "-race")
	}
	args = append(append(args, extra...), pkg)
	cmd := exec.Command(goBin, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
