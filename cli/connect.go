package cli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/internal/format"
	"github.com/hactl-dev/hactl/internal/kubeflags"

	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/internal/portforward"
)

// conn is what a verb needs of the kubeconfig: the namespace, a client
// and, for verbs that reach members, the port-forward dialer.
type conn struct {
	namespace string
	client    kubernetes.Interface
	dial      engine.DialFunc
	// memberTLS are the member TLS files' credentials (memberTLS);
	// memberSecret the Secret --secret names.
	memberTLS    *engine.Credentials
	memberSecret string
}

// userAgent is client-go's default user agent followed by this process's
// lock identity: an API server's audit log then names the hactl process
// (host, pid) behind every request, and which lock holder it was.
func userAgent() string {
	return rest.DefaultKubernetesUserAgent() + " " + actions.ProcessIdentity()
}

// errNoKubeconfig: no kubeconfig names a cluster and no flag does.
var errNoKubeconfig = errors.New("no configuration has been provided: no kubeconfig names a cluster")

// The client-side request rate limit: above what any one operation sends
// at once, low enough to stop a runaway loop.
const (
	clientQPS   = 50
	clientBurst = 100
)

// kubeconfigError says why the kubeconfig could not be read in a
// reader's words: client-go's loader names Go types when a file is not a
// kubeconfig or holds a field of the wrong kind.
func kubeconfigError(err error) error {
	msg := err.Error()
	file := ""
	if m := loadingFile.FindStringSubmatch(msg); m != nil {
		file = " " + m[1]
	}
	switch {
	case strings.Contains(msg, "couldn't get version/kind"):
		return fmt.Errorf("reading kubeconfig%s: it is not a kubeconfig (YAML or JSON with apiVersion: v1 and kind: Config); 'kubectl config view --kubeconfig FILE' shows what kubectl reads", file)
	case strings.Contains(msg, "cannot unmarshal"):
		return fmt.Errorf("reading kubeconfig%s: %s", file, format.JSONProblem(err, "a kubeconfig"))
	}
	return fmt.Errorf("reading kubeconfig: %w", err)
}

// loadingFile finds the file client-go names in a load error.
var loadingFile = regexp.MustCompile(`error loading config file ("[^"]*")`)

// restConfig is the connection the kubeconfig and the connection flags
// name, with hactl's user agent and transport guard, and the namespace.
// Without any configuration it says so and how to give one, rather than
// dialling localhost:8080 as client-go's defaults would.
func restConfig(flags *kubeflags.ConfigFlags) (*rest.Config, string, error) {
	loader := flags.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, "", kubeconfigError(err)
	}
	server := flags.APIServer != nil && *flags.APIServer != ""
	if len(raw.Clusters) == 0 && !server && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		where := "~/.kube/config"
		if k := os.Getenv("KUBECONFIG"); k != "" {
			where = "$KUBECONFIG (" + k + ")"
		}
		if flags.KubeConfig != nil && *flags.KubeConfig != "" {
			where = "--kubeconfig " + *flags.KubeConfig
		}
		return nil, "", withCode(ExitError, fmt.Errorf("%w (read %s): set KUBECONFIG or give --kubeconfig FILE, or --server URL; 'kubectl config view' shows what kubectl sees", errNoKubeconfig, where))
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, "", kubeconfigError(err)
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, "", kubeconfigError(err)
	}
	cfg.UserAgent = userAgent()
	// hactl sends a fixed handful of requests per operation, but some
	// at once: the live view starts seven lists and seven watches for its
	// caches beside the seven lists of its first screen. client-go's
	// default client-side limit (5 a second, bursts of 10) would hold the
	// first screen back for tokens. The API server's priority and fairness
	// still applies.
	if cfg.QPS == 0 && cfg.Burst == 0 {
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}
	cfg.Wrap(actions.GuardTransport)
	return cfg, ns, nil
}

// connect reads the kubeconfig the connection flags name; withDial also
// builds the port-forward dialer.
func connect(flags *kubeflags.ConfigFlags, withDial bool) (conn, error) {
	var c conn
	cfg, ns, err := restConfig(flags)
	if err != nil {
		return c, err
	}
	c.namespace = ns
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if withDial {
		if c.memberTLS, err = memberTLS(flags); err != nil {
			return c, err
		}
		c.memberSecret = flags.MemberSecret
		c.dial, err = portforward.NewDialer(cfg)
	}
	return c, err
}

// memberSecret is the Secret --secret names, "" when none.
func memberSecret(f *kubeflags.ConfigFlags) string {
	if f == nil {
		return ""
	}
	return f.MemberSecret
}

// memberTLS reads the member TLS files the flags name (--etcd-cacert,
// --etcd-cert, --etcd-key); nil when none is named. A certificate needs
// its key; errors name the flag and file, never their contents.
func memberTLS(f *kubeflags.ConfigFlags) (*engine.Credentials, error) {
	if f == nil || (f.MemberCAFile == "" && f.MemberCertFile == "" && f.MemberKeyFile == "") {
		return nil, nil
	}
	if (f.MemberCertFile == "") != (f.MemberKeyFile == "") {
		return nil, usageError("--etcd-cert and --etcd-key go together: give both (kubeadm: healthcheck-client.crt and healthcheck-client.key in /etc/kubernetes/pki/etcd)")
	}
	if f.MemberCertFile == "" {
		return nil, usageError("--etcd-cacert needs --etcd-cert and --etcd-key: the members ask every client for a certificate")
	}
	data := map[string][]byte{}
	for _, r := range []struct{ flag, path, key string }{
		{"--etcd-cacert", f.MemberCAFile, "ca.crt"},
		{"--etcd-cert", f.MemberCertFile, "tls.crt"},
		{"--etcd-key", f.MemberKeyFile, "tls.key"},
	} {
		if r.path == "" {
			continue
		}
		b, err := os.ReadFile(r.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.flag, err)
		}
		data[r.key] = b
	}
	cr, err := engine.CredentialsFromKeys(data)
	if err != nil {
		return nil, fmt.Errorf("--etcd-cert/--etcd-key: %w", err)
	}
	if _, err := tls.X509KeyPair(cr.CertPEM, cr.KeyPEM); err != nil {
		return nil, fmt.Errorf("--etcd-cert %s and --etcd-key %s are no certificate and key of one pair: %v", f.MemberCertFile, f.MemberKeyFile, err)
	}
	return cr, nil
}
