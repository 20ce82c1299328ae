package controlplane

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hactl-dev/hactl/sandbox/internal/proc"
)

// Component names, used for log files (logs/<component>.log), pid files
// and errors.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
)

const (
	host = "127.0.0.1"
	// ServiceClusterIPRange is the Service CIDR; its first address is the
	// kubernetes Service's cluster IP (in the serving certificate).
	ServiceClusterIPRange = "10.0.0.0/24"
	serviceIP             = "10.0.0.1"
	// defaultWait bounds Start when the caller's context has no deadline.
	defaultWait  = 2 * time.Minute
	stopGrace    = 10 * time.Second
	portAttempts = 3
)

// Options configures a control plane.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and
	// kube-scheduler (see internal/testbins).
	BinDir string
	// Dir is the working directory: pki/, etcd/ (data), logs/, pids/,
	// kubeconfigs/. It is created if missing and must not hold an earlier
	// control plane.
	Dir string
	// ControllerManager also runs kube-controller-manager (StatefulSet,
	// ServiceAccount, garbage collector and the other default controllers).
	ControllerManager bool
	// Scheduler also runs kube-scheduler.
	Scheduler bool
	// APIServerArgs are appended to kube-apiserver's arguments (a repeated
	// flag overrides the earlier one).
	APIServerArgs []string
	// EgressConfig, when set, is kube-apiserver's egress selector
	// configuration (an apiserver.k8s.io EgressSelectorConfiguration,
	// see package sandbox/egress): written to pki/egress-selector.yaml
	// and passed as --egress-selector-config-file.
	EgressConfig string
	// Detach lets the components outlive the process that started them
	// (by default they get SIGKILL when it dies); stop them later with
	// KillRecorded(Dir).
	Detach bool
}

// ControlPlane is a running etcd + kube-apiserver (+ controller-manager,
// scheduler) on loopback.
type ControlPlane struct {
	Dir string
	// Server is the API server URL, https://127.0.0.1:PORT.
	Server string
	// AdminKubeconfig is a kubeconfig for a system:masters client
	// certificate; Admin is the same as a rest.Config.
	AdminKubeconfig string
	Admin           *rest.Config
	// CACertFile is the cluster CA (it signed the serving and client
	// certificates); CAData is its PEM.
	CACertFile string
	CAData     []byte
	// ServiceAccountKeyFile is the private key that signs service account
	// tokens.
	ServiceAccountKeyFile string
	// EtcdURL is the client URL of the API server's etcd.
	EtcdURL string
	// Started records how long each component took to become ready.
	Started map[string]time.Duration

	ca    *ca
	mu    sync.Mutex
	procs []*proc.Process // in start order
}

type paths struct {
	pki, logs, pids, kubeconfigs, etcdData string
}

func layout(dir string) paths {
	return paths{
		pki:         filepath.Join(dir, "pki"),
		logs:        filepath.Join(dir, "logs"),
		pids:        filepath.Join(dir, "pids"),
		kubeconfigs: filepath.Join(dir, "kubeconfigs"),
		etcdData:    filepath.Join(dir, "etcd"),
	}
}

// Start issues certificates, starts the components on free loopback ports
// and returns once the API server's /readyz (and the optional components'
// /healthz) answer ok. On failure it stops whatever it started and returns
// an error carrying the tail of the failing component's log.
func Start(ctx context.Context, o Options) (_ *ControlPlane, err error) {
	if o.BinDir == "" || o.Dir == "" {
		return nil, errors.New("controlplane: BinDir and Dir are required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	p := layout(dir)
	if _, err := os.Stat(p.pki); err == nil {
		return nil, fmt.Errorf("controlplane: %s already holds a control plane (KillRecorded and remove it first)", dir)
	}
	for _, d := range []string{p.pki, p.logs, p.pids, p.kubeconfigs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultWait)
		defer cancel()
	}

	c := &ControlPlane{Dir: dir, Started: map[string]time.Duration{}}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	certs, err := c.writePKI(p)
	if err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx, o, p); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, o, p, certs); err != nil {
		return nil, err
	}
	if o.ControllerManager {
		if err := c.startControllerManager(ctx, o, p, certs); err != nil {
			return nil, err
		}
	}
	if o.Scheduler {
		if err := c.startScheduler(ctx, o, p, certs); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// certs holds the paths of the certificates and keys Start issued.
type certs map[string][2]string

func (c *ControlPlane) writePKI(p paths) (certs, error) {
	ca, caKeyPEM, err := newCA("hactl-sandbox-ca")
	if err != nil {
		return nil, err
	}
	c.ca = ca
	c.CAData = ca.CertPEM
	c.CACertFile = filepath.Join(p.pki, "ca.crt")
	if err := os.WriteFile(c.CACertFile, ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(p.pki, "ca.key"), caKeyPEM, 0o600); err != nil {
		return nil, err
	}

	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := keyToPEM(saKey)
	if err != nil {
		return nil, err
	}
	saPubPEM, err := publicKeyToPEM(saKey.Public())
	if err != nil {
		return nil, err
	}
	c.ServiceAccountKeyFile = filepath.Join(p.pki, "sa.key")
	if err := os.WriteFile(c.ServiceAccountKeyFile, saKeyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(p.pki, "sa.pub"), saPubPEM, 0o644); err != nil {
		return nil, err
	}

	loop := []net.IP{net.ParseIP(host)}
	type leaf struct {
		name, cn string
		orgs     []string
		ips      []net.IP
		dns      []string
		serving  bool
	}
	leaves := []leaf{
		{name: "apiserver", cn: APIServer, serving: true,
			ips: []net.IP{net.ParseIP(host), net.ParseIP(serviceIP)},
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
		{name: "admin", cn: "hactl-admin", orgs: []string{"system:masters"}},
		{name: "controller-manager-client", cn: "system:kube-controller-manager"},
		{name: "controller-manager-serving", cn: ControllerManager, serving: true, ips: loop, dns: []string{"localhost"}},
		{name: "scheduler-client", cn: "system:kube-scheduler"},
		{name: "scheduler-serving", cn: Scheduler, serving: true, ips: loop, dns: []string{"localhost"}},
	}
	out := certs{}
	for _, l := range leaves {
		crt, key, err := ca.issueFiles(p.pki, l.name, l.cn, l.orgs, l.ips, l.dns, l.serving)
		if err != nil {
			return nil, err
		}
		out[l.name] = [2]string{crt, key}
	}

	// The front-proxy (request header) CA lets the API server proxy to
	// aggregated API servers, and lets the controller manager's and the
	// scheduler's delegated authentication find a complete
	// extension-apiserver-authentication ConfigMap, as in a kubeadm
	// cluster.
	fp, _, err := newCA("hactl-sandbox-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	fpCA := filepath.Join(p.pki, "front-proxy-ca.crt")
	if err := os.WriteFile(fpCA, fp.CertPEM, 0o644); err != nil {
		return nil, err
	}
	out["front-proxy-ca"] = [2]string{fpCA, ""}
	crt, key, err := fp.issueFiles(p.pki, "front-proxy-client", "front-proxy-client", nil, nil, nil, false)
	if err != nil {
		return nil, err
	}
	out["front-proxy-client"] = [2]string{crt, key}
	return out, nil
}

// startComponent starts a component on fresh free ports, waits for ready,
// and retries with other ports if a port was taken in between.
func (c *ControlPlane) startComponent(ctx context.Context, o Options, name, bin string, p paths, nports int,
	args func(ports []int) []string, ready func(ctx context.Context, ports []int) error) ([]int, error) {
	begin := time.Now()
	for attempt := 1; ; attempt++ {
		ports, err := proc.FreePorts(host, nports)
		if err != nil {
			return nil, err
		}
		pr, err := proc.Start(proc.Spec{
			Name:    name,
			Path:    bin,
			Args:    args(ports),
			LogPath: filepath.Join(p.logs, name+".log"),
			PidPath: filepath.Join(p.pids, name+proc.PidFileSuffix),
			Detach:  o.Detach,
		})
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		watch := append([]*proc.Process{pr}, c.procs...)
		c.mu.Unlock()
		err = proc.Wait(ctx, 100*time.Millisecond, watch, func(ctx context.Context) error { return ready(ctx, ports) })
		if err == nil {
			c.mu.Lock()
			c.procs = append(c.procs, pr)
			c.mu.Unlock()
			c.Started[name] = time.Since(begin)
			return ports, nil
		}
		retry := pr.Exited() && proc.AddrInUse(pr) && attempt < portAttempts
		_ = pr.Stop(stopGrace)
		if !retry {
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
	}
}

func (c *ControlPlane) startEtcd(ctx context.Context, o Options, p paths) error {
	ports, err := c.startComponent(ctx, o, Etcd, filepath.Join(o.BinDir, "etcd"), p, 2,
		func(ports []int) []string {
			client := "http://" + host + ":" + strconv.Itoa(ports[0])
			peer := "http://" + host + ":" + strconv.Itoa(ports[1])
			return []string{
				"--name", "etcd",
				"--data-dir", p.etcdData,
				"--listen-client-urls", client,
				"--advertise-client-urls", client,
				"--listen-peer-urls", peer,
				"--initial-advertise-peer-urls", peer,
				"--initial-cluster", "etcd=" + peer,
				"--initial-cluster-state", "new",
				"--initial-cluster-token", "hactl-controlplane",
				// Scratch state for tests and the sandbox: speed over
				// durability across a machine crash.
				"--unsafe-no-fsync",
			}
		},
		func(ctx context.Context, ports []int) error {
			return etcdHealthy(ctx, "http://"+host+":"+strconv.Itoa(ports[0]))
		})
	if err != nil {
		return err
	}
	c.EtcdURL = "http://" + host + ":" + strconv.Itoa(ports[0])
	return nil
}

func etcdHealthy(ctx context.Context, url string) error {
	body, err := get(ctx, http.DefaultClient, url+"/health")
	if err != nil {
		return err
	}
	if !strings.Contains(body, `"health":"true"`) {
		return fmt.Errorf("etcd /health: %s", body)
	}
	return nil
}

func (c *ControlPlane) startAPIServer(ctx context.Context, o Options, p paths, cs certs) error {
	adminCert, err := tls.LoadX509KeyPair(cs["admin"][0], cs["admin"][1])
	if err != nil {
		return err
	}
	hc := c.httpClient(&adminCert)
	if o.EgressConfig != "" {
		if err := os.WriteFile(filepath.Join(p.pki, "egress-selector.yaml"), []byte(o.EgressConfig), 0o644); err != nil {
			return err
		}
	}
	ports, err := c.startComponent(ctx, o, APIServer, filepath.Join(o.BinDir, "kube-apiserver"), p, 1,
		func(ports []int) []string {
			a := []string{
				"--etcd-servers=" + c.EtcdURL,
				"--bind-address=" + host,
				"--advertise-address=" + host,
				"--secure-port=" + strconv.Itoa(ports[0]),
				"--cert-dir=" + p.pki,
				"--tls-cert-file=" + cs["apiserver"][0],
				"--tls-private-key-file=" + cs["apiserver"][1],
				"--client-ca-file=" + c.CACertFile,
				"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
				"--service-account-key-file=" + filepath.Join(p.pki, "sa.pub"),
				"--service-account-signing-key-file=" + c.ServiceAccountKeyFile,
				"--service-cluster-ip-range=" + ServiceClusterIPRange,
				"--authorization-mode=Node,RBAC",
				"--kubelet-client-certificate=" + cs["apiserver-kubelet-client"][0],
				"--kubelet-client-key=" + cs["apiserver-kubelet-client"][1],
				"--kubelet-preferred-address-types=InternalIP,Hostname",
				// The loopback address cannot be published as the
				// kubernetes Service's endpoint.
				"--endpoint-reconciler-type=none",
				"--allow-privileged=true",
				"--requestheader-client-ca-file=" + cs["front-proxy-ca"][0],
				"--requestheader-allowed-names=front-proxy-client",
				"--requestheader-username-headers=X-Remote-User",
				"--requestheader-group-headers=X-Remote-Group",
				"--requestheader-extra-headers-prefix=X-Remote-Extra-",
				"--proxy-client-cert-file=" + cs["front-proxy-client"][0],
				"--proxy-client-key-file=" + cs["front-proxy-client"][1],
			}
			if o.EgressConfig != "" {
				a = append(a, "--egress-selector-config-file="+filepath.Join(p.pki, "egress-selector.yaml"))
			}
			return append(a, o.APIServerArgs...)
		},
		func(ctx context.Context, ports []int) error {
			body, err := get(ctx, hc, "https://"+host+":"+strconv.Itoa(ports[0])+"/readyz")
			if err != nil {
				return err
			}
			if body != "ok" {
				return fmt.Errorf("/readyz: %s", body)
			}
			return nil
		})
	if err != nil {
		return err
	}
	c.Server = "https://" + host + ":" + strconv.Itoa(ports[0])

	c.AdminKubeconfig = filepath.Join(p.kubeconfigs, "admin.kubeconfig")
	c.Admin, err = c.writeKubeconfig(c.AdminKubeconfig, "hactl-admin", cs["admin"])
	return err
}

func (c *ControlPlane) startControllerManager(ctx context.Context, o Options, p paths, cs certs) error {
	kc := filepath.Join(p.kubeconfigs, "kube-controller-manager.kubeconfig")
	if _, err := c.writeKubeconfig(kc, "system:kube-controller-manager", cs["controller-manager-client"]); err != nil {
		return err
	}
	hc := c.httpClient(nil)
	_, err := c.startComponent(ctx, o, ControllerManager, filepath.Join(o.BinDir, "kube-controller-manager"), p, 1,
		func(ports []int) []string {
			return []string{
				"--kubeconfig=" + kc,
				"--authentication-kubeconfig=" + kc,
				"--authorization-kubeconfig=" + kc,
				"--bind-address=" + host,
				"--secure-port=" + strconv.Itoa(ports[0]),
				"--tls-cert-file=" + cs["controller-manager-serving"][0],
				"--tls-private-key-file=" + cs["controller-manager-serving"][1],
				"--leader-elect=false",
				"--use-service-account-credentials=true",
				"--service-account-private-key-file=" + c.ServiceAccountKeyFile,
				"--root-ca-file=" + c.CACertFile,
				"--cluster-signing-cert-file=" + c.CACertFile,
				"--cluster-signing-key-file=" + filepath.Join(p.pki, "ca.key"),
				"--service-cluster-ip-range=" + ServiceClusterIPRange,
			}
		},
		func(ctx context.Context, ports []int) error {
			return healthz(ctx, hc, ports[0])
		})
	return err
}

func (c *ControlPlane) startScheduler(ctx context.Context, o Options, p paths, cs certs) error {
	kc := filepath.Join(p.kubeconfigs, "kube-scheduler.kubeconfig")
	if _, err := c.writeKubeconfig(kc, "system:kube-scheduler", cs["scheduler-client"]); err != nil {
		return err
	}
	hc := c.httpClient(nil)
	_, err := c.startComponent(ctx, o, Scheduler, filepath.Join(o.BinDir, "kube-scheduler"), p, 1,
		func(ports []int) []string {
			return []string{
				"--kubeconfig=" + kc,
				"--authentication-kubeconfig=" + kc,
				"--authorization-kubeconfig=" + kc,
				"--bind-address=" + host,
				"--secure-port=" + strconv.Itoa(ports[0]),
				"--tls-cert-file=" + cs["scheduler-serving"][0],
				"--tls-private-key-file=" + cs["scheduler-serving"][1],
				"--leader-elect=false",
			}
		},
		func(ctx context.Context, ports []int) error {
			return healthz(ctx, hc, ports[0])
		})
	return err
}

func healthz(ctx context.Context, hc *http.Client, port int) error {
	body, err := get(ctx, hc, "https://"+host+":"+strconv.Itoa(port)+"/healthz")
	if err != nil {
		return err
	}
	if body != "ok" {
		return fmt.Errorf("/healthz: %s", body)
	}
	return nil
}

func (c *ControlPlane) httpClient(cert *tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(c.ca.Cert)
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
}

// get returns the body of a 200 response.
func get(ctx context.Context, hc *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %.300s", url, resp.Status, b)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeKubeconfig writes a self-contained kubeconfig (CA, certificate and
// key embedded) for the client certificate at files and returns the
// matching rest.Config.
func (c *ControlPlane) writeKubeconfig(path, user string, files [2]string) (*rest.Config, error) {
	crt, err := os.ReadFile(files[0])
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(files[1])
	if err != nil {
		return nil, err
	}
	return c.writeKubeconfigData(path, user, crt, key)
}

func (c *ControlPlane) writeKubeconfigData(path, user string, crt, key []byte) (*rest.Config, error) {
	const name = "hactl-sandbox"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            c.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData, CertData: crt, KeyData: key},
		QPS:             100,
		Burst:           200,
	}, nil
}

// UserKubeconfig issues a client certificate for user in groups, signed by
// the cluster CA, and writes a kubeconfig for it under Dir/kubeconfigs.
// The user has no permissions beyond the defaults for authenticated users
// until RBAC grants some.
func (c *ControlPlane) UserKubeconfig(user string, groups ...string) (path string, cfg *rest.Config, err error) {
	if user == "" {
		return "", nil, errors.New("controlplane: empty user name")
	}
	crt, key, err := c.ca.issue(user, groups, nil, nil, false)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256([]byte(user + "\x00" + strings.Join(groups, "\x00")))
	path = filepath.Join(layout(c.Dir).kubeconfigs, fileSafe(user)+"-"+hex.EncodeToString(sum[:4])+".kubeconfig")
	cfg, err = c.writeKubeconfigData(path, user, crt, key)
	return path, cfg, err
}

// IssueServingCert issues a serving certificate for ips and dns names,
// signed by the cluster CA (which kube-apiserver trusts as CACertFile), and
// writes it to Dir/pki/<name>.crt and .key.
func (c *ControlPlane) IssueServingCert(name string, ips []net.IP, dns []string) (certPath, keyPath string, err error) {
	return c.ca.issueFiles(layout(c.Dir).pki, fileSafe(name), name, nil, ips, dns, true)
}

// Pids lists the pids of the component processes still running.
func (c *ControlPlane) Pids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, p := range c.procs {
		if !p.Exited() {
			pids = append(pids, p.Pid())
		}
	}
	return pids
}

// LogFiles maps each started component to its log file.
func (c *ControlPlane) LogFiles() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]string{}
	for _, p := range c.procs {
		m[p.Name] = p.LogPath
	}
	return m
}

// Stop stops every process Start started, newest first (SIGTERM, SIGKILL
// after a grace period), and waits for each to exit. Dir is kept.
func (c *ControlPlane) Stop() error {
	c.mu.Lock()
	procs := append([]*proc.Process(nil), c.procs...)
	c.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// KillRecorded SIGKILLs every process recorded in a pid file under dir
// (control plane and etcd cluster alike) that is still the recorded
// process, for cleaning up after the process that started them crashed.
func KillRecorded(dir string) error { return proc.KillRecorded(dir) }

func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
