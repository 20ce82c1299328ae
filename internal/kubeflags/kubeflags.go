// Package kubeflags binds kubectl's connection flags (--kubeconfig,
// --context, --namespace, --server, --token, --as, --request-timeout, …)
// and turns them into client-go's configuration, as cli-runtime's
// genericclioptions.ConfigFlags does, with the same names, defaults and
// meaning.
//
// It exists so that the plugin does not import genericclioptions: that
// package brings cli-runtime's resource builder and with it kustomize,
// whose plugin loader imports the standard library's plugin package. A
// binary that imports plugin and is linked dynamically (cgo on, the
// default of go build and go install) keeps every exported method of
// every type, which made a plain go build of kubectl-hactl 35 MB larger
// (docs/size.md).
package kubeflags

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// ConfigFlags are kubectl's connection flags. A nil field is neither
// bound nor applied.
type ConfigFlags struct {
	KubeConfig *string
	CacheDir   *string

	ClusterName  *string
	AuthInfoName *string
	Context      *string
	Namespace    *string

	APIServer          *string
	TLSServerName      *string
	Insecure           *bool
	CAFile             *string
	DisableCompression *bool
	ProxyURL           *string

	CertFile             *string
	KeyFile              *string
	BearerToken          *string
	Impersonate          *string
	ImpersonateUID       *string
	ImpersonateGroup     *[]string
	ImpersonateUserExtra *[]string
	Username             *string
	Password             *string

	Timeout *string

	// Member TLS files, etcdctl's --cacert/--cert/--key for the members
	// themselves (not kubectl's: bound by AddMemberFlags): the client
	// certificate of clusters whose certificates exist only as files
	// (kubeadm's etcd).
	MemberCAFile, MemberCertFile, MemberKeyFile string
	// MemberSecret (--secret) names a Secret in each cluster's namespace
	// holding the client TLS material to dial its members with, over the
	// annotation hactl.dev/client-tls-secret and what a layout names.
	MemberSecret string

	persistent bool
	mu         sync.Mutex
	loader     clientcmd.ClientConfig
}

func str(s string) *string { return &s }

// NewConfigFlags returns the flags with kubectl's defaults: all but
// --username and --password (basic authentication, which kubectl no
// longer offers either; without them nothing prompts). persistent
// keeps the first client configuration built (as kubectl's
// usePersistentConfig), so that every read of it sees the same one.
func NewConfigFlags(persistent bool) *ConfigFlags {
	insecure, disableCompression := false, false
	groups, extras := []string{}, []string{}
	return &ConfigFlags{
		KubeConfig: str(""),
		CacheDir:   str(defaultCacheDir()),

		ClusterName:  str(""),
		AuthInfoName: str(""),
		Context:      str(""),
		Namespace:    str(""),

		APIServer:          str(""),
		TLSServerName:      str(""),
		Insecure:           &insecure,
		CAFile:             str(""),
		DisableCompression: &disableCompression,
		ProxyURL:           str(""),

		CertFile:             str(""),
		KeyFile:              str(""),
		BearerToken:          str(""),
		Impersonate:          str(""),
		ImpersonateUID:       str(""),
		ImpersonateGroup:     &groups,
		ImpersonateUserExtra: &extras,

		Timeout: str("0"),

		persistent: persistent,
	}
}

// defaultCacheDir is kubectl's: $KUBECACHEDIR, else ~/.kube/cache.
// hactl keeps no discovery cache; the flag is accepted for kubectl's
// sake.
func defaultCacheDir() string {
	if d := os.Getenv("KUBECACHEDIR"); d != "" {
		return d
	}
	return filepath.Join(homedir.HomeDir(), ".kube", "cache")
}

// AddFlags binds the flags to fs, with kubectl's names and help.
func (f *ConfigFlags) AddFlags(fs *pflag.FlagSet) {
	s := func(p *string, name, short, usage string) {
		if p != nil {
			fs.StringVarP(p, name, short, *p, usage)
		}
	}
	b := func(p *bool, name, usage string) {
		if p != nil {
			fs.BoolVar(p, name, *p, usage)
		}
	}
	a := func(p *[]string, name, usage string) {
		if p != nil {
			fs.StringArrayVar(p, name, *p, usage)
		}
	}
	s(f.KubeConfig, "kubeconfig", "", "Path to the kubeconfig file to use for CLI requests.")
	s(f.CacheDir, "cache-dir", "", "Default cache directory")
	s(f.CertFile, "client-certificate", "", "Path to a client certificate file for TLS")
	s(f.KeyFile, "client-key", "", "Path to a client key file for TLS")
	s(f.BearerToken, "token", "", "Bearer token for authentication to the API server")
	s(f.Impersonate, "as", "", "Username to impersonate for the operation. User could be a regular user or a service account in a namespace.")
	s(f.ImpersonateUID, "as-uid", "", "UID to impersonate for the operation.")
	a(f.ImpersonateGroup, "as-group", "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	a(f.ImpersonateUserExtra, "as-user-extra", "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	s(f.Username, "username", "", "Username for basic authentication to the API server")
	s(f.Password, "password", "", "Password for basic authentication to the API server")
	s(f.ClusterName, "cluster", "", "The name of the kubeconfig cluster to use")
	s(f.AuthInfoName, "user", "", "The name of the kubeconfig user to use")
	s(f.Namespace, "namespace", "n", "If present, the namespace scope for this CLI request")
	if f.Context != nil {
		// Repeated, the names add up (a,b): hactl's verbs that read
		// several contexts take both forms.
		fs.Var(&repeatable{p: f.Context}, "context", "The name of the kubeconfig context to use")
	}
	s(f.APIServer, "server", "s", "The address and port of the Kubernetes API server")
	s(f.TLSServerName, "tls-server-name", "", "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used")
	b(f.Insecure, "insecure-skip-tls-verify", "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure")
	s(f.CAFile, "certificate-authority", "", "Path to a cert file for the certificate authority")
	s(f.Timeout, "request-timeout", "", "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
	b(f.DisableCompression, "disable-compression", "If true, opt-out of response compression for all requests to the server")
	s(f.ProxyURL, "proxy-url", "", "Proxy URL to use for requests to the API server")
}

// AddMemberFlags binds the member TLS files to fs: --etcd-cacert,
// --etcd-cert, --etcd-key.
func (f *ConfigFlags) AddMemberFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.MemberCAFile, "etcd-cacert", "", "CA bundle verifying the etcd members' serving certificates, for clusters of static pods whose members ask clients for certificates (kubeadm's etcd: /etc/kubernetes/pki/etcd/ca.crt on a control-plane node). Read locally; never copied into the cluster.")
	fs.StringVar(&f.MemberCertFile, "etcd-cert", "", "Client certificate for those etcd members (kubeadm: /etc/kubernetes/pki/etcd/healthcheck-client.crt).")
	fs.StringVar(&f.MemberKeyFile, "etcd-key", "", "Key of --etcd-cert (kubeadm: /etc/kubernetes/pki/etcd/healthcheck-client.key).")
	fs.StringVar(&f.MemberSecret, "secret", "", "Secret in the cluster's namespace holding the client TLS material to dial the members with (tls.crt and tls.key, ca.crt to verify them): over the annotation hactl.dev/client-tls-secret and the Secrets an operator's objects name (for an operator whose objects may not be annotated). Its values are never printed.")
}

// ToRawKubeConfigLoader is the client configuration the kubeconfig and
// the flags name, the flags overriding the kubeconfig.
func (f *ConfigFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	if !f.persistent {
		return f.loaderOf()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loader == nil {
		f.loader = f.loaderOf()
	}
	return f.loader
}

// ToRESTConfig is the REST configuration of ToRawKubeConfigLoader, whose
// warnings pass through QuietWarnings.
func (f *ConfigFlags) ToRESTConfig() (*rest.Config, error) {
	cfg, err := f.ToRawKubeConfigLoader().ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.WarningHandlerWithContext = QuietWarnings{Next: rest.WarningLogger{}}
	return cfg, nil
}

// QuietWarnings passes the API server's warnings to Next, except the
// deprecation of v1 Endpoints: hactl reads them only because Patroni's
// Kubernetes DCS writes its leader record there, which the user did not
// choose by running hactl, and cannot act on.
type QuietWarnings struct {
	Next rest.WarningHandlerWithContext
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (q QuietWarnings) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, message string) {
	if strings.HasPrefix(message, "v1 Endpoints is deprecated") {
		return
	}
	q.Next.HandleWarningHeaderWithContext(ctx, code, agent, message)
}

func (f *ConfigFlags) loaderOf() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	if f.KubeConfig != nil {
		rules.ExplicitPath = *f.KubeConfig
	}
	o := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	if f.CertFile != nil {
		o.AuthInfo.ClientCertificate, o.AuthInfo.ClientCertificateData = *f.CertFile, nil
	}
	if f.KeyFile != nil {
		o.AuthInfo.ClientKey, o.AuthInfo.ClientKeyData = *f.KeyFile, nil
	}
	if f.BearerToken != nil {
		o.AuthInfo.Token, o.AuthInfo.TokenFile = *f.BearerToken, ""
	}
	set(&o.AuthInfo.Impersonate, f.Impersonate)
	set(&o.AuthInfo.ImpersonateUID, f.ImpersonateUID)
	if f.ImpersonateGroup != nil {
		o.AuthInfo.ImpersonateGroups = *f.ImpersonateGroup
	}
	if f.ImpersonateUserExtra != nil && len(*f.ImpersonateUserExtra) > 0 {
		extras := map[string][]string{}
		for _, e := range *f.ImpersonateUserExtra {
			if k, v, ok := strings.Cut(e, "="); ok {
				extras[k] = append(extras[k], v)
			}
		}
		o.AuthInfo.ImpersonateUserExtra = extras
	}
	set(&o.AuthInfo.Username, f.Username)
	set(&o.AuthInfo.Password, f.Password)
	set(&o.ClusterInfo.Server, f.APIServer)
	set(&o.ClusterInfo.TLSServerName, f.TLSServerName)
	set(&o.ClusterInfo.CertificateAuthority, f.CAFile)
	if f.Insecure != nil {
		o.ClusterInfo.InsecureSkipTLSVerify = *f.Insecure
	}
	if f.DisableCompression != nil {
		o.ClusterInfo.DisableCompression = *f.DisableCompression
	}
	set(&o.ClusterInfo.ProxyURL, f.ProxyURL)
	set(&o.CurrentContext, f.Context)
	set(&o.Context.Cluster, f.ClusterName)
	set(&o.Context.AuthInfo, f.AuthInfoName)
	set(&o.Context.Namespace, f.Namespace)
	set(&o.Timeout, f.Timeout)
	if f.Password == nil {
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, o)
	}
	// As kubectl: with a password flag, a missing one may be asked for.
	return clientcmd.NewInteractiveDeferredLoadingClientConfig(rules, o, os.Stdin)
}

// repeatable is a string flag that, given more than once, joins its
// values with commas.
type repeatable struct {
	p   *string
	set bool
}

func (r *repeatable) String() string {
	if r.p == nil {
		return ""
	}
	return *r.p
}

func (r *repeatable) Set(v string) error {
	if r.set && *r.p != "" && v != "" {
		*r.p += "," + v
		return nil
	}
	*r.p, r.set = v, true
	return nil
}

func (r *repeatable) Type() string { return "string" }
