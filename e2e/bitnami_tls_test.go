package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/status"
)

// bitnamiTLSAsk asks member pod of the Bitnami-style cluster name its own
// member ID as the chart's own etcdctl dials it (the key pair and CA of
// the Secret auth.client.existingSecret, the server checked against the
// member's DNS name) and as root with password, through a port-forward,
// without hactl; "" when it does not answer.
func bitnamiTLSAsk(t *testing.T, ns, name, pod, password string) string {
	t.Helper()
	tc, err := scenario.BitnamiClientTLS(context.Background(), s.KC, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := askMember(ns, pod, pod+"."+name+"-headless."+ns+".svc:2379",
		clientv3.Config{TLS: tc, Username: scenario.BitnamiRootUser, Password: password})
	return id
}

// Bitnami's chart with client TLS and client-certificate auth
// (auth.client.secureTransport, enableAuthentication, existingSecret)
// beside its default password auth, no hactl label or annotation
// anywhere, through the real kubectl: hactl follows the StatefulSet's
// volume etcd-client-certs and its ETCD_* files to the Secret's CA and
// key pair, and its ETCD_ROOT_PASSWORD to the password; every member
// answers with the ID it gives an independent client dialling the same
// way; neither the password nor the private key appears in hactl's
// output. A user bound to ClusterRole view, who may not read Secrets, is
// told the credentials are unavailable, which Secret and what to grant.
func TestBitnamiTLSThroughKubectl(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "bitnami-tls")
	ctx := context.Background()
	password := bitnamiPassword(t, ns, name)
	certs, err := s.KC.CoreV1().Secrets(ns).Get(ctx, scenario.BitnamiCertsSecret(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(certs.Data[scenario.BitnamiKeyFile])
	if !strings.Contains(keyPEM, "PRIVATE KEY") {
		t.Fatalf("Secret %s has no private key under %s", certs.Name, scenario.BitnamiKeyFile)
	}
	sts, err := s.KC.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noHactlKeys(t, "the StatefulSet", sts.Labels, sts.Annotations, sts.Spec.Template.Labels, sts.Spec.Template.Annotations)
	// The members ask for both: a certificate and a user.
	if id := askMemberNoCert(ns, name, password); id != "" {
		t.Fatalf("%s-0 answers a client without a certificate", name)
	}
	if err := certOnlyGet(t, ns, name); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Fatalf("%s-0, read with the certificate and no user: %v, want %v: auth is not on", name, err, rpctypes.ErrPermissionDenied)
	}

	// Polled: on a loaded machine a member may issue its token after the
	// probe's deadline (member_unreachable, "issued no auth token").
	cs := statusUntil(t, ns, name, func(cs status.ClusterStatus) error {
		if !cs.Verdict.FailoverReady {
			return fmt.Errorf("not failover-ready: %v", codesOf(cs))
		}
		return nil
	})
	out, errOut, _ := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
	if len(cs.Members) != 3 {
		t.Errorf("%d members", len(cs.Members))
	}
	for _, m := range cs.Members {
		want := bitnamiTLSAsk(t, ns, name, m.Name, password)
		if m.Reachable == nil || !*m.Reachable || want == "" || m.MemberID != want {
			t.Errorf("member %s: reachable %v, ID %q; with the Secret's certificate as root it says %q", m.Name, m.Reachable, m.MemberID, want)
		}
	}
	table, tableErr, _ := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "wide")
	report, reportErr, _ := kubectl(t, "hactl", "explain", name, name+"-1", "-n", ns, "--intent", "replace")
	secrets := map[string]string{"the root password": password, "the private key": keyPEM,
		"the private key (base64)": base64.StdEncoding.EncodeToString([]byte(keyPEM))}
	// Any line of the key's body on its own, too.
	for i, l := range strings.Split(keyPEM, "\n") {
		if len(l) >= 32 && !strings.HasPrefix(l, "-----") {
			secrets[fmt.Sprintf("line %d of the private key", i)] = l
		}
	}
	for what, text := range map[string]string{"json": out + errOut, "table": table + tableErr, "explain": report + reportErr} {
		for which, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s appears in %s output", which, what)
			}
		}
	}

	// A user bound to view, who may not read Secrets: told which Secret,
	// the members not asked.
	user := "bitnami-tls-reader"
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if _, err := s.KC.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.KC.RbacV1().RoleBindings(ns).Delete(ctx, user, metav1.DeleteOptions{}) }()
	out, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json", "--as", user)
	// hactl reads the TLS Secret first, and names it.
	if code != 4 || !strings.Contains(out+errOut, "credentials_unavailable") ||
		!strings.Contains(out+errOut, `secret "`+scenario.BitnamiCertsSecret(name)+`"`) || !strings.Contains(out+errOut, "grant get on that Secret") {
		t.Errorf("without get on the Secrets: exit %d, want 4 and credentials_unavailable naming Secret %s\n%s%s", code, scenario.BitnamiCertsSecret(name), out, errOut)
	}
}

// askMemberNoCert asks member 0 of the Bitnami-style cluster name as root
// with password over TLS (the Secret's CA) but without a client
// certificate; "" when it does not answer.
func askMemberNoCert(ns, name, password string) string {
	tc, err := scenario.BitnamiClientTLS(context.Background(), s.KC, ns, name)
	if err != nil {
		return ""
	}
	tc.Certificates = nil
	pod := name + "-0"
	id, _ := askMember(ns, pod, pod+"."+name+"-headless."+ns+".svc:2379",
		clientv3.Config{TLS: tc, Username: scenario.BitnamiRootUser, Password: password})
	return id
}

// certOnlyGet reads a key from member 0 of the Bitnami-style cluster name
// with the Secret's certificate and no user, through a port-forward. etcd
// answers Status to any client its certificate names (the CN), so a read
// shows whether the member asks for a user.
func certOnlyGet(t *testing.T, ns, name string) error {
	t.Helper()
	tc, err := scenario.BitnamiClientTLS(context.Background(), s.KC, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	pod := name + "-0"
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{pod + "." + name + "-headless." + ns + ".svc:2379"},
		TLS: tc, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return s.Dial(ctx, ns, pod, 2379)
		})}})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "hactl-e2e-auth-check", clientv3.WithSerializable())
	return err
}
