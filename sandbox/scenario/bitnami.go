package scenario

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
const bitnamiEnableAuth = `ctl() {
  etcdctl --endpoints=http://127.0.0.1:2379 --dial-timeout=2s --command-timeout=5s "$@"
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
		run: runBitnamiAuth,
	})
}

func runBitnamiAuth(ctx context.Context, env Env, s *Scenario) error {
	pw, err := BitnamiRootPassword(ctx, env.Kube, env.Namespace, s.Name)
	if apierrors.IsNotFound(err) {
		pw, err = randAlphaNum(bitnamiPasswordLength)
	}
	if err != nil {
		return err
	}
	p := Params{Name: s.Name, Namespace: env.Namespace, Replicas: 3, AntiAffinity: "required", PDB: true,
		BitnamiAuth: true, RootPassword: pw}
	if err := apply(ctx, env, SelfRegistering, p); err != nil {
		return err
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
			err := bitnamiAuthOn(ctx, env, pod, pw)
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
// anonymous client and answers the root user.
func bitnamiAuthOn(ctx context.Context, env Env, pod, pw string) error {
	if _, err := Status(ctx, env, pod); !errors.Is(err, rpctypes.ErrUserEmpty) {
		return fmt.Errorf("%s, asked anonymously: %v", pod, err)
	}
	a, err := env.Address(pod)
	if err != nil {
		return err
	}
	url := "http://" + a + ":2379"
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 2 * time.Second,
		Username: BitnamiRootUser, Password: pw, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = c.Status(sctx, url)
	return err
}
