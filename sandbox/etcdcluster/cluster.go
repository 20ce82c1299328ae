package etcdcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hactl-dev/hactl/sandbox/internal/proc"
)

const (
	host = "127.0.0.1"
	// stopGrace is how long a member gets to exit after SIGTERM.
	stopGrace = 10 * time.Second
	// defaultWait bounds waits when the caller's context has no deadline.
	defaultWait = 60 * time.Second
	// portAttempts bounds retries when a picked port was taken meanwhile.
	portAttempts = 3
)

// Options configures a cluster.
type Options struct {
	// BinDir holds the etcd binary (see internal/testbins).
	BinDir string
	// Dir holds data dirs, logs and pid files; it is created if missing.
	Dir string
	// Members is the number of voting members; default 3.
	Members int
	// Token is the initial-cluster-token; default a random one, so that no
	// member of another cluster can be mixed in by mistake.
	Token string
	// QuotaBackendBytes sets --quota-backend-bytes when > 0.
	QuotaBackendBytes int64
	// ExtraArgs are appended to every member's arguments (a repeated flag
	// overrides an earlier one).
	ExtraArgs []string
	// Detach lets the members outlive the process that started them (by
	// default they get SIGKILL when it dies); stop them later with
	// KillRecorded(Dir).
	Detach bool
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Dir   string
	Token string
	// Members in the order they were created (learners added later come
	// last). Do not modify the slice; AddLearner appends to it.
	Members []*Member

	opts Options
	mu   sync.Mutex
}

// Member is one etcd member process.
type Member struct {
	Name      string
	ClientURL string
	PeerURL   string
	DataDir   string
	LogPath   string

	c       *Cluster
	pidPath string

	mu   sync.Mutex
	proc *proc.Process
	last MemberArgs // arguments of the last start (state, cluster, extras)
}

// MemberArgs overrides a member's bootstrap flags on Restart.
type MemberArgs struct {
	// InitialClusterState is "new" or "existing"; empty keeps the value of
	// the member's previous start.
	InitialClusterState string
	// InitialCluster is the --initial-cluster value ("name=peerURL,...");
	// empty keeps the previous one. Member.Self gives the value that makes
	// the member bootstrap a one-member cluster of its own.
	InitialCluster string
	// ExtraArgs are appended after the cluster's ExtraArgs (nil keeps the
	// previous start's).
	ExtraArgs []string
	// NoWait returns as soon as the process started instead of waiting for
	// it to serve clients; use it when the member is expected to fail or
	// to hang (no quorum).
	NoWait bool
}

// Start creates and starts a cluster and returns once every member's
// /health reports true. On failure every process it started is stopped.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.BinDir == "" || o.Dir == "" {
		return nil, errors.New("etcdcluster: BinDir and Dir are required")
	}
	if o.Members <= 0 {
		o.Members = 3
	}
	if o.Token == "" {
		o.Token = "hactl-" + randomHex(6)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()

	c := &Cluster{Dir: o.Dir, Token: o.Token, opts: o}
	for attempt := 1; ; attempt++ {
		err := c.startAll(ctx)
		if err == nil {
			return c, nil
		}
		inUse := false
		for _, m := range c.Members {
			if m.proc != nil && m.proc.Exited() && proc.AddrInUse(m.proc) {
				inUse = true
			}
		}
		_ = c.Stop()
		if !inUse || attempt == portAttempts {
			return nil, err
		}
		for _, m := range c.Members {
			if err := os.RemoveAll(m.DataDir); err != nil {
				return nil, err
			}
		}
	}
}

func (c *Cluster) startAll(ctx context.Context) error {
	n := c.opts.Members
	ports, err := proc.FreePorts(host, 2*n)
	if err != nil {
		return err
	}
	c.Members = make([]*Member, n)
	var ic []string
	for i := range n {
		m := c.newMember(fmt.Sprintf("etcd-%d", i), ports[2*i], ports[2*i+1])
		c.Members[i] = m
		ic = append(ic, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		args := MemberArgs{InitialClusterState: "new", InitialCluster: strings.Join(ic, ","), NoWait: true}
		if err := m.start(args); err != nil {
			return err
		}
	}
	for _, m := range c.Members {
		if err := proc.Wait(ctx, 50*time.Millisecond, []*proc.Process{m.proc}, m.health); err != nil {
			return fmt.Errorf("etcd member %s did not become healthy: %w", m.Name, err)
		}
	}
	return nil
}

func (c *Cluster) newMember(name string, clientPort, peerPort int) *Member {
	return &Member{
		Name:      name,
		ClientURL: "http://" + host + ":" + strconv.Itoa(clientPort),
		PeerURL:   "http://" + host + ":" + strconv.Itoa(peerPort),
		DataDir:   filepath.Join(c.Dir, "data", name),
		LogPath:   filepath.Join(c.Dir, "logs", name+".log"),
		pidPath:   filepath.Join(c.Dir, "pids", name+proc.PidFileSuffix),
		c:         c,
	}
}

// Stop stops every member and waits for them to exit. Data dirs are kept.
//
// Members that do not answer a Status request within half a second
// (paused, hung) are SIGKILLed first. Then the followers get SIGTERM, and
// the leader last: a leader that receives SIGTERM hands leadership to a
// follower it is connected to, and if that follower is shutting down (or
// paused) the hand-over only ends when it times out (7 s with etcd's
// defaults); with no follower left it skips the hand-over. A member that
// ignores SIGTERM for 10 s is SIGKILLed.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	ms := append([]*Member(nil), c.Members...)
	c.mu.Unlock()
	roles := c.roles(ms)
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for _, phase := range []role{unresponsive, follower, leader} {
		for i, m := range ms {
			if m == nil || roles[i] != phase {
				continue
			}
			if phase == unresponsive {
				wg.Go(func() { errs[i] = m.Kill() })
			} else {
				wg.Go(func() { errs[i] = m.Stop() })
			}
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

type role int

const (
	stopped role = iota
	unresponsive
	follower
	leader
)

// roles asks each running member on its own, with a short deadline, whether
// it leads.
func (c *Cluster) roles(ms []*Member) []role {
	roles := make([]role, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		if m == nil || !m.Running() {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			st, err := m.Status(ctx)
			switch {
			case err != nil:
				roles[i] = unresponsive
			case st.Leader == st.Header.MemberId:
				roles[i] = leader
			default:
				roles[i] = follower
			}
		})
	}
	wg.Wait()
	return roles
}

// ClientURLs lists every member's client URL.
func (c *Cluster) ClientURLs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	urls := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		urls = append(urls, m.ClientURL)
	}
	return urls
}

// Member returns the member called name, or nil.
func (c *Cluster) Member(name string) *Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Pids lists the pids of the member processes currently running.
func (c *Cluster) Pids() []int {
	c.mu.Lock()
	ms := append([]*Member(nil), c.Members...)
	c.mu.Unlock()
	var pids []int
	for _, m := range ms {
		if pid := m.Pid(); pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Client returns a client for all members' endpoints that never syncs its
// endpoint list. The caller closes it.
func (c *Cluster) Client() (*clientv3.Client, error) {
	return NewClient(c.ClientURLs()...)
}

// InitialCluster is the --initial-cluster value naming every member.
func (c *Cluster) InitialCluster() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		parts = append(parts, m.Name+"="+m.PeerURL)
	}
	return strings.Join(parts, ",")
}

// AddLearner adds a learner called name through the cluster's API (member
// add --learner) and starts it with --initial-cluster-state=existing. It
// returns once the learner serves clients. Promote it with the client's
// MemberPromote once it has caught up.
func (c *Cluster) AddLearner(ctx context.Context, name string) (*Member, error) {
	if c.Member(name) != nil {
		return nil, fmt.Errorf("etcdcluster: a member called %s already exists", name)
	}
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	cli, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer cli.Close()

	for attempt := 1; ; attempt++ {
		ports, err := proc.FreePorts(host, 2)
		if err != nil {
			return nil, err
		}
		m := c.newMember(name, ports[0], ports[1])
		resp, err := addLearner(ctx, cli, m.PeerURL)
		if err != nil {
			return nil, fmt.Errorf("adding learner %s: %w", name, err)
		}
		names := map[string]string{}
		c.mu.Lock()
		for _, o := range c.Members {
			names[o.PeerURL] = o.Name
		}
		c.mu.Unlock()
		names[m.PeerURL] = name
		var ic []string
		for _, pm := range resp.Members {
			n := pm.Name
			for _, u := range pm.PeerURLs {
				if known, ok := names[u]; ok {
					n = known
				}
			}
			for _, u := range pm.PeerURLs {
				ic = append(ic, n+"="+u)
			}
		}
		err = m.start(MemberArgs{InitialClusterState: "existing", InitialCluster: strings.Join(ic, ","), NoWait: true})
		if err == nil {
			err = m.waitServing(ctx)
		}
		if err == nil {
			c.mu.Lock()
			c.Members = append(c.Members, m)
			c.mu.Unlock()
			return m, nil
		}
		inUse := m.proc != nil && m.proc.Exited() && proc.AddrInUse(m.proc)
		_ = m.Stop()
		rmCtx, rmCancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, rmErr := cli.MemberRemove(rmCtx, resp.Member.ID)
		rmCancel()
		if !inUse || attempt == portAttempts || rmErr != nil {
			return nil, errors.Join(fmt.Errorf("starting learner %s: %w", name, err), rmErr)
		}
		_ = os.RemoveAll(m.DataDir)
	}
}

// addLearner calls MemberAddAsLearner until the cluster accepts it. etcd
// refuses a membership change ("unhealthy cluster") until the leader has
// been connected to a quorum for a while, which is the case for the first
// seconds after a start.
func addLearner(ctx context.Context, cli *clientv3.Client, peerURL string) (*clientv3.MemberAddResponse, error) {
	for {
		resp, err := cli.MemberAddAsLearner(ctx, []string{peerURL})
		if err == nil || !errors.Is(err, rpctypes.ErrUnhealthy) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Self is the --initial-cluster value with only this member: restarting a
// wiped member with it and state "new" bootstraps a separate one-member
// cluster (the re-bootstrap hazard hactl must detect).
func (m *Member) Self() string { return m.Name + "=" + m.PeerURL }

// Running reports whether the member's process is running (paused counts).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil && !m.proc.Exited()
}

// Pid is the member's process id, or 0 when it is not running.
func (m *Member) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil || m.proc.Exited() {
		return 0
	}
	return m.proc.Pid()
}

// Stop stops the member (SIGTERM, SIGKILL after a grace period) and waits
// for it to exit. Stopping a stopped member does nothing.
func (m *Member) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	return m.proc.Stop(stopGrace)
}

// Kill SIGKILLs the member and waits for it to exit.
func (m *Member) Kill() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	return m.proc.Kill()
}

// Pause stops the member with SIGSTOP: its sockets stay open but nothing
// answers, like a hung or partitioned member. It returns once every thread
// of the member is stopped.
func (m *Member) Pause() error {
	if err := m.signal("pause", syscall.SIGSTOP); err != nil {
		return err
	}
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for !p.Stopped() {
		if p.Exited() {
			return fmt.Errorf("pause %s: it exited", m.Name)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pause %s: SIGSTOP sent, but its threads were not all stopped within 10s", m.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Resume continues a paused member with SIGCONT.
func (m *Member) Resume() error { return m.signal("resume", syscall.SIGCONT) }

func (m *Member) signal(what string, sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil || m.proc.Exited() {
		return fmt.Errorf("cannot %s %s: not running", what, m.Name)
	}
	return m.proc.Signal(sig)
}

// Wipe removes the member's data dir. The member must be stopped.
func (m *Member) Wipe() error {
	if m.Running() {
		return fmt.Errorf("cannot wipe %s: it is running", m.Name)
	}
	return os.RemoveAll(m.DataDir)
}

// Restart stops the member if it runs, then starts it with its previous
// flags overridden by args. Unless args.NoWait, it returns once the member
// serves clients (which needs a leader), and fails with the member's log
// tail if the process exits first.
func (m *Member) Restart(ctx context.Context, args MemberArgs) error {
	if err := m.Stop(); err != nil {
		return err
	}
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	m.mu.Lock()
	prev := m.last
	m.mu.Unlock()
	if args.InitialClusterState == "" {
		args.InitialClusterState = prev.InitialClusterState
	}
	if args.InitialCluster == "" {
		args.InitialCluster = prev.InitialCluster
	}
	if args.ExtraArgs == nil {
		args.ExtraArgs = prev.ExtraArgs
	}
	if err := m.start(args); err != nil {
		return err
	}
	if args.NoWait {
		return nil
	}
	return m.waitServing(ctx)
}

// WaitServing waits until the member answers a Status request (voters and
// learners alike), or fails with its log tail if it exits first.
func (m *Member) WaitServing(ctx context.Context) error {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	return m.waitServing(ctx)
}

func (m *Member) waitServing(ctx context.Context) error {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%s was never started", m.Name)
	}
	cli, err := m.Client()
	if err != nil {
		return err
	}
	defer cli.Close()
	err = proc.Wait(ctx, 50*time.Millisecond, []*proc.Process{p}, func(ctx context.Context) error {
		_, err := cli.Status(ctx, m.ClientURL)
		return err
	})
	if err != nil {
		return fmt.Errorf("etcd member %s did not start serving: %w", m.Name, err)
	}
	return nil
}

func (m *Member) start(args MemberArgs) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && !m.proc.Exited() {
		return fmt.Errorf("%s is already running", m.Name)
	}
	o := m.c.opts
	a := []string{
		"--name", m.Name,
		"--data-dir", m.DataDir,
		"--listen-client-urls", m.ClientURL,
		"--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL,
		"--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", args.InitialCluster,
		"--initial-cluster-state", args.InitialClusterState,
		"--initial-cluster-token", o.Token,
	}
	if o.QuotaBackendBytes > 0 {
		a = append(a, "--quota-backend-bytes", strconv.FormatInt(o.QuotaBackendBytes, 10))
	}
	a = append(a, o.ExtraArgs...)
	a = append(a, args.ExtraArgs...)
	p, err := proc.Start(proc.Spec{
		Name:    m.Name,
		Path:    filepath.Join(o.BinDir, "etcd"),
		Args:    a,
		LogPath: m.LogPath,
		PidPath: m.pidPath,
		Detach:  o.Detach,
	})
	if err != nil {
		return err
	}
	m.proc = p
	m.last = args
	return nil
}

func (m *Member) health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("/health: %s: %q", resp.Status, b)
	}
	if h.Health != "true" {
		return fmt.Errorf("/health: %s %s", h.Health, h.Reason)
	}
	return nil
}

// Client returns a client that talks to this member only (no endpoint
// sync). Creating it does not block; the caller closes it.
func (m *Member) Client() (*clientv3.Client, error) { return NewClient(m.ClientURL) }

// Status asks this member alone for its status.
func (m *Member) Status(ctx context.Context) (*clientv3.StatusResponse, error) {
	cli, err := m.Client()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	return cli.Status(ctx, m.ClientURL)
}

// NewClient returns a client for exactly these endpoints: it never syncs
// its endpoint list with the cluster's member list, and it does not block
// while connecting. The caller closes it.
func NewClient(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:        endpoints,
		AutoSyncInterval: 0,
		Logger:           zap.NewNop(),
	})
}

// KillRecorded SIGKILLs every member process recorded under dir (after a
// crash of the process that started them); see proc.KillRecorded.
func KillRecorded(dir string) error { return proc.KillRecorded(dir) }

func withDefaultDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultWait)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
