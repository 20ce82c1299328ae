package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// claimBlock picks the sandbox's address block: the first b in 1…254 whose
// lock it can take (so two sandboxes on one machine never share member
// addresses) and where nothing listens on the first member's addresses
// (leftovers of a sandbox that crashed and was never cleaned up). The lock
// lives as long as the returned file stays open: for the supervisor's
// life.
func claimBlock() (int, *os.File, error) {
	dir := filepath.Join(os.TempDir(), "hactl-sandbox-blocks-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, nil, err
	}
	for b := 1; b <= 254; b++ {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(b)+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return 0, nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return 0, nil, err
		}
		if blockFree(b) {
			return b, f, nil
		}
		f.Close()
	}
	return 0, nil, errors.New("no free address block in 127.1-254.0.0")
}

func blockFree(b int) bool {
	for _, hp := range []string{
		fmt.Sprintf("127.%d.1.1:2379", b),
		fmt.Sprintf("127.%d.1.1:2380", b),
		fmt.Sprintf("127.%d.2.1:2380", b),
	} {
		l, err := net.Listen("tcp", hp)
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
