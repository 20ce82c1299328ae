package sandbox

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/sandbox/scenario"
)

// bitnamiScenario is the Bitnami chart's cluster with its default
// authentication, which TestSandbox starts beside the demo set.
const bitnamiScenario = "bitnami-auth"

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
