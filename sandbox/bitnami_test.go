package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// bitnamiScenario is the Bitnami chart's cluster with its default
// authentication, which TestSandbox starts beside the demo set.
const bitnamiScenario = "bitnami-auth"

// bitnamiTLSScenario is the same chart with client TLS and
// client-certificate auth, which TestSandbox starts too.
const bitnamiTLSScenario = "bitnami-tls"

// authStatus asks one member, dialled alone as user:password (anonymous
// when user is empty), for its status.
func authStatus(ctx context.Context, url, user, password string) (*clientv3.StatusResponse, error) {
	return memberStatus(ctx, url, clientv3.Config{Username: user, Password: password})
}

// bitnamiAuth checks, in TestSandbox's sandbox, that bitnami-auth's
// members really ask for a user: through `kubectl port-forward` to each
// pod, an anonymous Status fails with "user name is empty" and one as
// root with the chart's Secret's password answers, every member in one
// cluster; and that nothing of the scenario carries a key of hactl's.
func bitnamiAuth(t *testing.T, sb *Sandbox) {
	kc := kube(t, sb)
	ctx := context.Background()
	ns := sb.State.Namespace
	const name = bitnamiScenario

	t.Run("auth is on: anonymous refused, root answers, one cluster", func(t *testing.T) {
		pw, err := scenario.BitnamiRootPassword(ctx, kc, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		sts, err := kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The password reaches the container the chart's way.
		var ref bool
		for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "ETCD_ROOT_PASSWORD" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
				e.ValueFrom.SecretKeyRef.Name == scenario.BitnamiSecret(name) && e.ValueFrom.SecretKeyRef.Key == scenario.BitnamiPasswordKey {
				ref = true
			}
		}
		if !ref {
			t.Fatalf("ETCD_ROOT_PASSWORD is not read from Secret %s key %s", scenario.BitnamiSecret(name), scenario.BitnamiPasswordKey)
		}
		clusters := map[uint64]bool{}
		members := map[uint64]bool{}
		for i := range 3 {
			pod := scenario.MemberName(name, i)
			url := "http://" + portForward(t, sb, ns, pod, 2379)
			if _, err := authStatus(ctx, url, "", ""); !errors.Is(err, rpctypes.ErrUserEmpty) {
				t.Errorf("%s, asked anonymously: %v, want %v", pod, err, rpctypes.ErrUserEmpty)
			}
			if _, err := authStatus(ctx, url, scenario.BitnamiRootUser, pw+"x"); err == nil {
				t.Errorf("%s accepted a wrong password", pod)
			}
			st, err := authStatus(ctx, url, scenario.BitnamiRootUser, pw)
			if err != nil {
				t.Fatalf("%s, asked as root: %v", pod, err)
			}
			clusters[st.Header.ClusterId] = true
			members[st.Header.MemberId] = true
		}
		if len(clusters) != 1 || len(members) != 3 {
			t.Fatalf("cluster IDs %v, member IDs %v: want 3 members of one cluster", clusters, members)
		}
	})

	t.Run("nothing of hactl's on the chart's objects", func(t *testing.T) {
		sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name}
		sts, err := kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hactlFree(t, "StatefulSet", sts.Name, sts.Labels, sts.Annotations)
		hactlFree(t, "pod template", sts.Name, sts.Spec.Template.Labels, sts.Spec.Template.Annotations)
		for _, v := range sts.Spec.VolumeClaimTemplates {
			hactlFree(t, "volume claim template", v.Name, v.Labels, v.Annotations)
		}
		selectedHactlFree(ctx, t, kc, ns, name, sel, 3, 3, 2)
		if _, err := kc.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("the chart's client Service %s: %v", name, err)
		}
		pdb, err := kc.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hactlFree(t, "PodDisruptionBudget", pdb.Name, pdb.Labels, pdb.Annotations)
		sec, err := kc.CoreV1().Secrets(ns).Get(ctx, scenario.BitnamiSecret(name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hactlFree(t, "Secret", sec.Name, sec.Labels, sec.Annotations)
	})
}

// bitnamiTLS checks, in TestSandbox's sandbox, that bitnami-tls's members
// serve TLS from the chart's Secret and ask for a certificate and a
// user: through `kubectl port-forward` to each pod, a client with the
// Secret's key pair (the server checked against the member's DNS name
// and the Secret's ca.crt) and the root password answers, every member
// in one cluster; one without a certificate is refused in the
// handshake, one with the certificate but no user may not read a key,
// and a plain-text client gets nothing.
func bitnamiTLS(t *testing.T, sb *Sandbox) {
	kc := kube(t, sb)
	ctx := context.Background()
	ns := sb.State.Namespace
	const name = bitnamiTLSScenario

	pw, err := scenario.BitnamiRootPassword(ctx, kc, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := scenario.BitnamiClientTLS(ctx, kc, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hactlFree(t, "StatefulSet", sts.Name, sts.Labels, sts.Annotations)
	spec := sts.Spec.Template.Spec
	var vol bool
	for _, v := range spec.Volumes {
		vol = vol || (v.Name == scenario.BitnamiCertsVolume && v.Secret != nil && v.Secret.SecretName == scenario.BitnamiCertsSecret(name))
	}
	env := map[string]string{}
	for _, e := range spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if !vol || env["ETCD_CLIENT_CERT_AUTH"] != "true" || env["ETCD_CERT_FILE"] != scenario.BitnamiCertsDir+scenario.BitnamiCertFile ||
		!strings.HasPrefix(env["ETCD_ADVERTISE_CLIENT_URLS"], "https://") {
		t.Fatalf("not the chart's client TLS: volumes %+v, env %v", spec.Volumes, env)
	}

	clusters := map[uint64]bool{}
	members := map[uint64]bool{}
	for i := range 3 {
		pod := scenario.MemberName(name, i)
		url := "https://" + portForward(t, sb, ns, pod, 2379)
		withCert := tc.Clone()
		withCert.ServerName = scenario.BitnamiMemberHost(name, ns, i)
		st, err := memberStatus(ctx, url, clientv3.Config{TLS: withCert, Username: scenario.BitnamiRootUser, Password: pw})
		if err != nil {
			t.Fatalf("%s, asked with the Secret's certificate as root: %v", pod, err)
		}
		clusters[st.Header.ClusterId] = true
		members[st.Header.MemberId] = true
		if err := certOnlyGet(ctx, url, withCert); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("%s, read with the certificate and no user: %v, want %v", pod, err, rpctypes.ErrPermissionDenied)
		}

		// Refused connections each through a port-forward of their own:
		// kubectl port-forward ends once a connection's stream fails.
		noCert := withCert.Clone()
		noCert.Certificates = nil
		url = "https://" + portForward(t, sb, ns, pod, 2379)
		if _, err := memberStatus(ctx, url, clientv3.Config{TLS: noCert, Username: scenario.BitnamiRootUser, Password: pw}); err == nil {
			t.Errorf("%s answered a client without a certificate", pod)
		}
		url = "http://" + portForward(t, sb, ns, pod, 2379)
		if _, err := memberStatus(ctx, url, clientv3.Config{Username: scenario.BitnamiRootUser, Password: pw}); err == nil {
			t.Errorf("%s answered a plain-text client", pod)
		}
	}
	if len(clusters) != 1 || len(members) != 3 {
		t.Fatalf("cluster IDs %v, member IDs %v: want 3 members of one cluster", clusters, members)
	}
}

// certOnlyGet reads a key from the member at url with tc's certificate
// and no user.
func certOnlyGet(ctx context.Context, url string, tc *tls.Config) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, TLS: tc, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = c.Get(ctx, "hactl-sandbox-auth-check", clientv3.WithSerializable())
	return err
}
