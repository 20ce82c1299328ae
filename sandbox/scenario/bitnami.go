package scenario

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/sandbox/internal/pki"
)

// Bitnami's etcd chart (bitnami/charts bitnami/etcd) with its default
// authentication (auth.rbac.create: true) creates the Secret <fullname>
// holding the root user's password under etcd-root-password, and its
// StatefulSet's container reads it as ETCD_ROOT_PASSWORD (secretKeyRef).
const (
	// BitnamiPasswordKey is the Secret's key.
	BitnamiPasswordKey = "etcd-root-password"
	// BitnamiRootUser is the user Bitnami's entrypoint creates (with role
	// root) before it enables authentication.
	BitnamiRootUser = "root"
	// bitnamiPasswordLength is the chart's randAlphaNum 10.
	bitnamiPasswordLength = 10
)

// BitnamiSecret is the name of the Secret holding the root password of
// the Bitnami-style cluster name: the chart's fullname, the cluster's.
func BitnamiSecret(name string) string { return name }

// BitnamiRootPassword reads the root password of the Bitnami-style
// cluster name in ns from its Secret, as a client of the cluster would.
func BitnamiRootPassword(ctx context.Context, kc kubernetes.Interface, ns, name string) (string, error) {
	s, err := kc.CoreV1().Secrets(ns).Get(ctx, BitnamiSecret(name), metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	pw := string(s.Data[BitnamiPasswordKey])
	if pw == "" {
		return "", fmt.Errorf("secret %s/%s has no %s", ns, s.Name, BitnamiPasswordKey)
	}
	return pw, nil
}

// Bitnami's chart with auth.client.secureTransport and
// auth.client.enableAuthentication mounts the Secret
// auth.client.existingSecret as the volume etcd-client-certs at
// BitnamiCertsDir, and names its files (certFilename, certKeyFilename,
// caFilename: ca.crt when empty) in ETCD_CERT_FILE, ETCD_KEY_FILE and
// ETCD_TRUSTED_CA_FILE (bitnami/charts bitnami/etcd/templates/statefulset.yaml).
const (
	BitnamiCertsDir    = "/opt/bitnami/etcd/certs/client/"
	BitnamiCertsVolume = "etcd-client-certs"
	BitnamiCertFile    = "cert.pem"
	BitnamiKeyFile     = "key.pem"
	BitnamiCAFile      = "ca.crt"
)

// BitnamiCertsSecret is the Secret auth.client.existingSecret of the
// Bitnami-style cluster name with client TLS (bitnami-tls): its users
// supply it; the sandbox names it <fullname>-client-certs.
func BitnamiCertsSecret(name string) string { return name + "-client-certs" }

// BitnamiClientTLS is the TLS configuration of a client of the
// Bitnami-style cluster name in ns with client TLS, from the Secret
// BitnamiCertsSecret, as the chart's own etcdctl dials: the members' key
// pair as client certificate, ca.crt as the CA. The members' certificate
// names their DNS names (<pod>.<name>-headless.<ns>.svc[.cluster.local]),
// the client Service, localhost, 127.0.0.1 and their sandbox addresses.
func BitnamiClientTLS(ctx context.Context, kc kubernetes.Interface, ns, name string) (*tls.Config, error) {
	s, err := kc.CoreV1().Secrets(ns).Get(ctx, BitnamiCertsSecret(name), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return cozystackTLS(s.Data[BitnamiCAFile], s.Data[BitnamiCertFile], s.Data[BitnamiKeyFile])
}

// BitnamiMemberHost is the DNS name of member n of the Bitnami-style
// cluster name in ns under its headless Service.
func BitnamiMemberHost(name, ns string, n int) string {
	return fmt.Sprintf("%s.%s-headless.%s.svc", MemberName(name, n), name, ns)
}

// MintBitnamiCerts issues what a user of Bitnami's chart puts in
// auth.client.existingSecret: a CA and the members' one key pair, used
// both to serve (serverAuth) and by the chart's own etcdctl as a client
// certificate (clientAuth). It names every member's DNS name under the
// headless Service, the Service's wildcard, the client Service <name>,
// localhost and 127.0.0.1, and addrs (the members' sandbox addresses,
// which the runner substitutes for those names in what the members and
// their etcdctl dial). Its CN is the cluster's name, which is no etcd
// user: with client-certificate auth a certificate alone grants nothing.
func MintBitnamiCerts(name, ns string, replicas int, addrs []string) (*BitnamiCerts, error) {
	ca, err := pki.NewCA(name+"-ca", 10*kubeadmCertValidity)
	if err != nil {
		return nil, err
	}
	headless := name + "-headless." + ns + ".svc"
	dns := []string{"*." + headless, "*." + headless + ".cluster.local",
		name, name + "." + ns, name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local", "localhost"}
	for i := range replicas {
		dns = append(dns, BitnamiMemberHost(name, ns, i), BitnamiMemberHost(name, ns, i)+".cluster.local")
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil {
			return nil, fmt.Errorf("member address %q is not an IP", a)
		}
		ips = append(ips, ip)
	}
	cert, key, err := ca.Issue(pki.Leaf{CN: name, DNS: dns, IPs: ips,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, kubeadmCertValidity)
	if err != nil {
		return nil, err
	}
	return &BitnamiCerts{Cert: cert, Key: key, CA: ca.CertPEM}, nil
}

// randAlphaNum is Helm's randAlphaNum: n random letters and digits.
func randAlphaNum(n int) (string, error) {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(chars))))
		if err != nil {
			return "", err
		}
		b[i] = chars[k.Int64()]
	}
	return string(b), nil
}

// bitnamiEnableAuth is what Bitnami's entrypoint does on a cluster's first
// start (libetcd.sh etcd_configure_rbac): unless authentication is
// already on, add the user root (its password: ETCD_ROOT_PASSWORD), grant
// it the role root and enable authentication. It runs in the member's
// container, with its environment.
// With client TLS it dials with the files ETCD_* name.
const bitnamiEnableAuth = `ctl() {
  if [ -n "$ETCD_CERT_FILE" ]; then
    etcdctl --endpoints=https://127.0.0.1:2379 --dial-timeout=2s --command-timeout=5s \
      --cacert="$ETCD_TRUSTED_CA_FILE" --cert="$ETCD_CERT_FILE" --key="$ETCD_KEY_FILE" "$@"
  else
    etcdctl --endpoints=http://127.0.0.1:2379 --dial-timeout=2s --command-timeout=5s "$@"
  fi
}
if ctl auth status 2>/dev/null | grep -q "Authentication Status: true"; then
  echo "==> authentication already enabled"
  exit 0
fi
echo "==> enabling etcd authentication"
printf '%s\n' "$ETCD_ROOT_PASSWORD" | ctl user add root --interactive=false
ctl user grant-role root root
ctl auth enable
`

func init() {
	register(&Scenario{
		Name:  "bitnami-auth",
		Shape: SelfRegistering,
		Summary: "3 members laid out as Bitnami's etcd chart with its default authentication (auth.rbac.create): " +
			"the self-registering entrypoint (ETCD_ON_K8S=yes), the Secret <name> with etcd-root-password read as " +
			"ETCD_ROOT_PASSWORD, auth enabled with user root; nothing of hactl's on any object",
		run: func(ctx context.Context, env Env, s *Scenario) error { return runBitnami(ctx, env, s, false) },
	})
	register(&Scenario{
		Name:  "bitnami-tls",
		Shape: SelfRegistering,
		Summary: "bitnami-auth with the chart's client TLS and client-certificate auth (auth.client.secureTransport, " +
			"enableAuthentication, existingSecret <name>-client-certs with cert.pem, key.pem, ca.crt mounted at " +
			BitnamiCertsDir + "): https client URLs, every client must show a certificate of the CA and log in as root",
		run: func(ctx context.Context, env Env, s *Scenario) error { return runBitnami(ctx, env, s, true) },
	})
}

// runBitnami sets up Bitnami's chart with its default authentication,
// with client TLS (withTLS) or without.
func runBitnami(ctx context.Context, env Env, s *Scenario, withTLS bool) error {
	pw, err := BitnamiRootPassword(ctx, env.Kube, env.Namespace, s.Name)
	if apierrors.IsNotFound(err) {
		pw, err = randAlphaNum(bitnamiPasswordLength)
	}
	if err != nil {
		return err
	}
	p := Params{Name: s.Name, Namespace: env.Namespace, Replicas: 3, AntiAffinity: "required", PDB: true,
		BitnamiAuth: true, RootPassword: pw}
	if withTLS {
		var addrs []string
		for i := range p.Replicas {
			a, err := env.Address(MemberName(s.Name, i))
			if err != nil {
				return err
			}
			addrs = append(addrs, a)
		}
		if p.ClientTLS, err = MintBitnamiCerts(s.Name, env.Namespace, p.Replicas, addrs); err != nil {
			return err
		}
	}
	if err := apply(ctx, env, SelfRegistering, p); err != nil {
		return err
	}
	var tc *tls.Config
	if withTLS {
		// The Secret's, which an earlier run may have created.
		if tc, err = BitnamiClientTLS(ctx, env.Kube, env.Namespace, s.Name); err != nil {
			return err
		}
	}
	if err := waitRollout(ctx, env, s.Name); err != nil {
		return err
	}
	first := MemberName(s.Name, 0)
	// The cluster has just formed: a member may still refuse a
	// reconfiguration for a few seconds.
	for {
		out, err := env.Exec(ctx, first, []string{"/bin/sh", "-ec", bitnamiEnableAuth})
		if err == nil {
			env.Logf("scenario %s: %s", s.Name, strings.TrimSpace(out))
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("enabling authentication in %s: %v: %w", first, err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
	// Every member applies it: wait until each one refuses an anonymous
	// client and answers root.
	for i := range p.Replicas {
		pod := MemberName(s.Name, i)
		for {
			err := bitnamiAuthOn(ctx, env, pod, pw, tc)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s to require authentication: %v: %w", pod, err, ctx.Err())
			case <-time.After(poll):
			}
		}
	}
	return nil
}

// bitnamiAuthOn checks that the member of pod refuses Status to an
// anonymous client and answers the root user. With tc (client TLS) both
// show the Secret's certificate: the anonymous client is then the
// certificate's CN, which is no user. etcd answers Status to any
// authenticated name, so that client is asked for a key instead, which
// needs a user's permission.
func bitnamiAuthOn(ctx context.Context, env Env, pod, pw string, tc *tls.Config) error {
	a, err := env.Address(pod)
	if err != nil {
		return err
	}
	url := "http://" + a + ":2379"
	if tc != nil {
		url = "https://" + a + ":2379"
	}
	ask := func(user, password string, get bool) error {
		cfg := clientv3.Config{Endpoints: []string{url}, DialTimeout: 2 * time.Second,
			Username: user, Password: password, Logger: zap.NewNop()}
		if tc != nil {
			cfg.TLS = tc.Clone()
		}
		c, err := clientv3.New(cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if get {
			_, err = c.Get(sctx, "hactl-sandbox-auth-check", clientv3.WithSerializable())
			return err
		}
		_, err = c.Status(sctx, url)
		return err
	}
	if tc == nil {
		if err := ask("", "", false); !errors.Is(err, rpctypes.ErrUserEmpty) {
			return fmt.Errorf("%s, asked anonymously: %v", pod, err)
		}
	} else if err := ask("", "", true); !errors.Is(err, rpctypes.ErrPermissionDenied) && !errors.Is(err, rpctypes.ErrUserNotFound) {
		return fmt.Errorf("%s, asked with the certificate only: %v", pod, err)
	}
	return ask(BitnamiRootUser, pw, false)
}
