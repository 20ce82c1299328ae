package runner

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procTCPHex is addr as /proc/net/tcp writes it: the IPv4 address as a
// host-order (little-endian) 32-bit hex number, then the port.
func procTCPHex(addr *net.TCPAddr) (string, bool) {
	ip := addr.IP.To4()
	if ip == nil {
		return "", false
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], addr.Port), true
}

// socketInode finds, in a /proc/net/tcp table, the inode of the socket
// whose local address is local and remote address remote: the other end
// of a connection accepted on remote from local.
func socketInode(table string, local, remote *net.TCPAddr) (uint64, bool) {
	l, ok1 := procTCPHex(local)
	r, ok2 := procTCPHex(remote)
	if !ok1 || !ok2 {
		return 0, false
	}
	sc := bufio.NewScanner(strings.NewReader(table))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[1] != l || f[2] != r {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil || ino == 0 {
			continue
		}
		return ino, true
	}
	return 0, false
}

// dialerInode is the inode of the socket on this host that dialled c
// (a connection accepted from loopback), from /proc/net/tcp.
func dialerInode(c net.Conn) (uint64, bool) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, false
	}
	return socketInode(string(b), remote, local)
}

// holdsSocket reports whether process pid has socket inode ino open.
func holdsSocket(pid int, ino uint64) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == want {
			return true
		}
	}
	return false
}

// socketOwner returns the address of the member one of whose container
// processes holds socket inode ino ("" if none does): the sender of a
// peer connection the peer proxy cannot read (TLS).
func (r *Runner) socketOwner(ino uint64) string {
	r.mu.Lock()
	type cand struct {
		addr string
		pids []int
	}
	var cands []cand
	for _, m := range r.members {
		m.mu.Lock()
		var pids []int
		for _, c := range m.containers {
			if pid := c.pid(); pid > 0 {
				pids = append(pids, pid)
			}
		}
		m.mu.Unlock()
		cands = append(cands, cand{m.addrs.Address, pids})
	}
	r.mu.Unlock()
	for _, c := range cands {
		for _, pid := range c.pids {
			if holdsSocket(pid, ino) {
				return c.addr
			}
		}
	}
	return ""
}
