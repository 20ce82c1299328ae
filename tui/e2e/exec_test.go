package e2e

import (
	"os/exec"
)

// testenvCommand runs a binary with only env and returns its combined
// output.
func testenvCommand(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
