package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// EnvDir names the sandbox directory when --dir / Options.Dir is empty.
const EnvDir = "HACTL_SANDBOX_DIR"

// EnvAgent names the kubectl-hactl binary the sandbox's agent pods run
// when --agent / Options.Agent is empty.
const EnvAgent = "HACTL_AGENT"

// DefaultDir is the sandbox directory used when none is given:
// $HACTL_SANDBOX_DIR, else <user cache dir>/hactl/sandbox (on Linux
// ~/.cache/hactl/sandbox, or $XDG_CACHE_HOME/hactl/sandbox).
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no default sandbox dir (%v): pass --dir", err)
	}
	return filepath.Join(c, "hactl", "sandbox"), nil
}

// layout names everything a sandbox keeps under its directory.
type layout struct{ dir string }

func (l layout) marker() string        { return filepath.Join(l.dir, ".hactl-sandbox") }
func (l layout) config() string        { return filepath.Join(l.dir, "config.json") }
func (l layout) supervisor() string    { return filepath.Join(l.dir, "supervisor.json") }
func (l layout) state() string         { return filepath.Join(l.dir, "state.json") }
func (l layout) control() string       { return filepath.Join(l.dir, "control.json") }
func (l layout) s3() string            { return filepath.Join(l.dir, "s3.json") }
func (l layout) kubeconfig() string    { return filepath.Join(l.dir, "kubeconfig") }
func (l layout) logs() string          { return filepath.Join(l.dir, "logs") }
func (l layout) supervisorLog() string { return filepath.Join(l.dir, "logs", "supervisor.log") }
func (l layout) controlplane() string  { return filepath.Join(l.dir, "controlplane") }
func (l layout) kwok() string          { return filepath.Join(l.dir, "kwok") }
func (l layout) versitygw() string     { return filepath.Join(l.dir, "versitygw") }
func (l layout) s3Root() string        { return filepath.Join(l.dir, "s3") }
func (l layout) runner() string        { return filepath.Join(l.dir, "runner") }
func (l layout) volumes() string       { return filepath.Join(l.dir, "volumes") }

// node is the directory standing for fake node node's filesystem root
// (hostPath volumes, kubeadm's /etc/kubernetes).
func (l layout) node(node string) string { return filepath.Join(l.dir, "nodes", node) }
func (l layout) agent() string           { return filepath.Join(l.dir, "bin", "kubectl-hactl") }

// config is what `up` asks the supervisor to run (DIR/config.json).
type config struct {
	BinDir    string   `json:"binDir"`
	Namespace string   `json:"namespace"`
	Scenarios []string `json:"scenarios"`
	// Nodes is the number of fake nodes (default 3).
	Nodes int `json:"nodes"`
	// Agent is the kubectl-hactl binary agent pods run; empty: the
	// supervisor builds it from RepoRoot into DIR/bin/kubectl-hactl.
	Agent    string `json:"agent,omitempty"`
	RepoRoot string `json:"repoRoot,omitempty"`
	// APIServerArgs are appended to kube-apiserver's flags.
	APIServerArgs []string `json:"apiServerArgs,omitempty"`
	// ScenarioTimeout bounds each scenario's setup (default
	// defaultScenarioTimeout): the start's own timeout, so a loaded
	// machine given a longer start gives its scenarios as long.
	ScenarioTimeout Duration `json:"scenarioTimeout,omitempty"`
}

// supervisorRecord identifies the supervisor process (DIR/supervisor.json):
// pid and kernel start time; it leads its own session (sid = pid).
type supervisorRecord struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Phase is where a sandbox's supervisor is in its life.
type Phase string

// Phases.
const (
	PhaseStarting Phase = "starting"
	PhaseReady    Phase = "ready"
	PhaseFailed   Phase = "failed"
	PhaseStopping Phase = "stopping"
	PhaseStopped  Phase = "stopped"
)

// State is what the supervisor publishes about the sandbox
// (DIR/state.json). It holds no secret.
type State struct {
	Phase Phase  `json:"phase"`
	Error string `json:"error,omitempty"`
	// Step says what the supervisor is doing while starting.
	Step       string `json:"step,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Server     string `json:"server,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	// Block is the address block: members listen on 127.<Block>.1.n.
	Block    int           `json:"block,omitempty"`
	Clusters []ClusterInfo `json:"clusters,omitempty"`
	// S3Endpoint is versitygw's URL; its credentials are in S3File.
	S3Endpoint string `json:"s3Endpoint,omitempty"`
	S3File     string `json:"s3File,omitempty"`
	Logs       string `json:"logs,omitempty"`
	// BinDir holds the pinned binaries (kubectl, etcdctl, ...).
	BinDir string `json:"binDir,omitempty"`
	// Agent is the kubectl-hactl binary that pods of hactl's agent image
	// (command kubectl-hactl, e.g. restore pods) run; empty if there is
	// none, and AgentError then says why.
	Agent      string    `json:"agent,omitempty"`
	AgentError string    `json:"agentError,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	// ReadyAfter is how long the supervisor took to become ready.
	ReadyAfter Duration `json:"readyAfter,omitempty"`
}

// ClusterInfo describes one scenario's cluster.
type ClusterInfo struct {
	Scenario  string   `json:"scenario"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Shape     string   `json:"shape"`
	Summary   string   `json:"summary"`
	Reasons   []string `json:"reasons"`
	MayAlso   []string `json:"mayAlso,omitempty"`
	// ProbeArgs are the flags `kubectl hactl` needs to ask the members
	// (kubeadm's etcd: --etcd-cacert, --etcd-cert and --etcd-key, files
	// of its first node), none for most clusters.
	ProbeArgs []string `json:"probeArgs,omitempty"`
	Setup     Duration `json:"setup"`
}

// Duration marshals as a Go duration string.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// controlRecord is how to reach the supervisor's control API
// (DIR/control.json, mode 0600).
type controlRecord struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
}

// S3 is the sandbox's artifact store (versitygw).
type S3 struct {
	// Endpoint is http://127.0.0.1:PORT (path-style addressing).
	Endpoint  string `json:"endpoint"`
	Region    string `json:"region"`
	Bucket    string `json:"bucket"`
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

// URL is a gocloud.dev/blob URL for the bucket (credentials come from the
// environment, see Env).
func (s S3) URL() string {
	return "s3://" + s.Bucket + "?endpoint=" + s.Endpoint + "&use_path_style=true&region=" + s.Region
}

// Env returns the AWS_* variables an S3 client reads its credentials from.
func (s S3) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey, "AWS_REGION=" + s.Region}
}

func writeJSON(path string, v any, mode os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ErrNotRunning says no live sandbox supervisor owns the directory.
var ErrNotRunning = errors.New("no sandbox is running there")

// ErrRunning says a sandbox already runs in the directory.
var ErrRunning = errors.New("a sandbox is already running there")
