// Package druidstandin holds the sandbox's stand-ins for the two images
// of an etcd-druid member pod, which cannot run here: etcd-wrapper
// (github.com/gardener/etcd-wrapper) and etcd-backup-restore's etcdbrctl
// (github.com/gardener/etcd-backup-restore). The runner runs them for
// containers of those images with the container's own args and
// environment (see Main); they do what the real programs do that is
// visible from outside the pod, around a real etcd:
//
//   - the wrapper (`etcd-wrapper start-etcd ...`) asks backup-restore, at
//     --backup-restore-host-port, to initialise (GET /initialization/start,
//     then /initialization/status until Successful), fetches the member's
//     configuration (GET /config), runs the real etcd binary with it
//     (etcd --config-file) and serves GET /readyz on --etcd-wrapper-port:
//     200 once its etcd serves a linearizable read, 503 otherwise;
//   - backup-restore (`etcdbrctl server ...`) serves /initialization/start,
//     /initialization/status, /config (the mounted etcd.conf.yaml with
//     this member's name, its own advertise URLs and
//     initial-cluster-state new, as its serveConfig does when no learner
//     is present) and /healthz on --server-port; renews its member Lease
//     (named after POD_NAME) every --k8s-heartbeat-duration with
//     holderIdentity <member ID>:<cluster ID>:<Leader|Member> (hex, as
//     its heartbeat does) and annotation member.etcd.gardener.cloud/tls-enabled;
//     and, while its etcd is the leader, takes a real full snapshot
//     (Maintenance.Snapshot, gzipped) into the Local store once (the
//     full-snap Lease's holderIdentity the snapshot's revision, renewTime
//     its time) and renews the delta-snap Lease every
//     --delta-snapshot-period with the latest revision.
//
// Addresses, DNS names and mount paths inside the configuration the
// stand-ins exchange are the pod's view; the runner passes, in ContextEnv,
// how the sandbox maps them (its addresses, the pods' DNS names, the
// volumes' host directories), and the wrapper translates the
// configuration it hands etcd as the runner translates flags.
package druidstandin

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The stand-ins' command names: the runner links its program under these
// names, and Main dispatches on them.
const (
	WrapperCommand       = "etcd-wrapper"
	BackupRestoreCommand = "etcdbrctl"
)

// ContextEnv is the variable through which the runner hands a stand-in
// its Context (JSON).
const ContextEnv = "HACTL_SANDBOX_STANDIN"

// Context is how the sandbox maps what a container sees.
type Context struct {
	// Address is the member's own address (the pod IP, 0.0.0.0,
	// 127.0.0.1 and localhost stand for it); PeerAddress where its etcd
	// really listens for peers (the runner's peer proxy forwards
	// Address's peer port there).
	Address     string `json:"address"`
	PeerAddress string `json:"peerAddress,omitempty"`
	// Hosts maps DNS names (the StatefulSet's pods under its Service, the
	// pod's host aliases) to sandbox addresses.
	Hosts map[string]string `json:"hosts,omitempty"`
	// Mounts maps the container's mount paths to host directories.
	Mounts map[string]string `json:"mounts,omitempty"`
}

// Commands lists the stand-ins' command names.
func Commands() []string { return []string{WrapperCommand, BackupRestoreCommand} }

// Main runs the stand-in named name (the base of argv[0]) with args and
// returns its exit code; ok is false when name is not a stand-in's.
func Main(name string, args []string) (code int, ok bool) {
	switch filepath.Base(name) {
	case WrapperCommand:
		return runWrapper(args), true
	case BackupRestoreCommand:
		return runBackupRestore(args), true
	}
	return 0, false
}

func loadContext() (Context, error) {
	var c Context
	v := os.Getenv(ContextEnv)
	if v == "" {
		return c, fmt.Errorf("%s is not set: the sandbox's runner starts this stand-in", ContextEnv)
	}
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return c, fmt.Errorf("%s: %w", ContextEnv, err)
	}
	return c, nil
}

// Path maps a container path to its host path: under the longest mount
// path that holds it; unchanged when none does.
func (c Context) Path(p string) string {
	best := ""
	for m := range c.Mounts {
		mc := filepath.Clean(m)
		if (p == mc || strings.HasPrefix(p, strings.TrimSuffix(mc, "/")+"/")) && len(mc) > len(best) {
			best = mc
		}
	}
	if best == "" {
		return p
	}
	var host string
	for m, h := range c.Mounts {
		if filepath.Clean(m) == best {
			host = h
		}
	}
	return filepath.Join(host, strings.TrimPrefix(p, best))
}

// Host maps a host name of the pod's view to a sandbox address: a known
// DNS name, or the pod's own (0.0.0.0, 127.0.0.1, localhost, ::).
func (c Context) Host(h string) string {
	if a, ok := c.Hosts[strings.TrimSuffix(strings.ToLower(h), ".")]; ok {
		return a
	}
	switch h {
	case "0.0.0.0", "127.0.0.1", "localhost", "::", "::1", "":
		return c.Address
	}
	return h
}

// HostPort maps host:port.
func (c Context) HostPort(hp string) string {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return c.Host(hp)
	}
	return net.JoinHostPort(c.Host(h), p)
}

// URLs maps every URL of a comma-separated list; to, when set, replaces
// every host (listen URLs).
func (c Context) URLs(list, to string) string {
	var out []string
	for _, u := range strings.Split(list, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || p.Host == "" {
			out = append(out, u)
			continue
		}
		host := c.Host(p.Hostname())
		if to != "" {
			host = to
		}
		p.Host = net.JoinHostPort(host, p.Port())
		out = append(out, p.String())
	}
	return strings.Join(out, ",")
}

// MemberURLs maps every URL of an initial cluster (name=url,...).
func (c Context) MemberURLs(list string) string {
	var out []string
	for _, kv := range strings.Split(list, ",") {
		name, u, ok := strings.Cut(kv, "=")
		if !ok {
			out = append(out, kv)
			continue
		}
		out = append(out, name+"="+c.URLs(u, ""))
	}
	return strings.Join(out, ",")
}

// flags parses --name=value (and --name value) arguments into a map,
// skipping positional ones (the subcommand).
func flags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		a = strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(a, "="); ok {
			out[k] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out[a] = args[i+1]
			i++
			continue
		}
		out[a] = "true"
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
