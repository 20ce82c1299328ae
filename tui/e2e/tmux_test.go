package e2e

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// klogLine matches a klog header (E1129 12:00:00.000000 …), which must
// never reach the TUI's screen.
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+`)

// cpuTicks reads a process's user+system CPU time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	fields := strings.Fields(string(b[i+2:]))
	// Fields after the command: state is [0]; utime is [11], stime [12].
	ut, err := strconv.ParseInt(fields[11], 10, 64)
	if err != nil {
		return 0, err
	}
	st, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return ut + st, nil
}
