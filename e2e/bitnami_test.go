package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/sandbox/scenario"
	"github.com/hactl-dev/hactl/status"
)

// bitnamiAsk asks member pod its own member ID as root with password,
// through a port-forward, without hactl; "" when it does not answer.
func bitnamiAsk(ns, pod, password string) string {
	id, _ := askMember(ns, pod, "member:2379", clientv3.Config{Username: scenario.BitnamiRootUser, Password: password})
	return id
}

// bitnamiPassword is the root password Bitnami-style cluster name's
// Secret holds, read without hactl.
func bitnamiPassword(t *testing.T, ns, name string) string {
	t.Helper()
	pw, err := scenario.BitnamiRootPassword(context.Background(), s.KC, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return pw
}

// noHactlKeys fails t for every key of ms that names hactl: what (an
// object) must be found with no hactl label or annotation.
func noHactlKeys(t *testing.T, what string, ms ...map[string]string) {
	t.Helper()
	for _, m := range ms {
		for k := range m {
			if strings.Contains(k, "hactl") {
				t.Errorf("%s carries %s: the layout must be found without one", what, k)
			}
		}
	}
}

// Bitnami's chart with its default auth (every client must give a user
// and password), no hactl label anywhere, through the real kubectl: the
// members are asked as root with the password the StatefulSet's own
// ETCD_ROOT_PASSWORD names, each answers with the ID it gives etcd's own
// client, and the password appears nowhere in hactl's output. A user who
// may not read that Secret gets credentials_unavailable naming it, and
// what to grant.
func TestBitnamiAuthThroughKubectl(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "bitnami-auth")
	ctx := context.Background()
	password := bitnamiPassword(t, ns, name)
	sts, err := s.KC.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noHactlKeys(t, "the StatefulSet", sts.Labels)
	if id := bitnamiAsk(ns, name+"-0", ""); id != "" {
		t.Fatalf("%s-0 answers an anonymous client: auth is not on", name)
	}

	var cs status.ClusterStatus
	out, errOut, code := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("not a ClusterStatus (exit %d): %v\n%s%s", code, err, out, errOut)
	}
	if code != 0 || !cs.Verdict.FailoverReady {
		t.Errorf("exit %d, failover-ready %v: %+v\n%s", code, cs.Verdict.FailoverReady, cs.Verdict.Reasons, errOut)
	}
	for _, m := range cs.Members {
		want := bitnamiAsk(ns, m.Name, password)
		if m.Reachable == nil || !*m.Reachable || want == "" || m.MemberID != want {
			t.Errorf("member %s: reachable %v, ID %q; as root it says %q", m.Name, m.Reachable, m.MemberID, want)
		}
	}
	table, tableErr, _ := kubectl(t, "hactl", "status", name, "-n", ns, "-o", "wide")
	report, reportErr, _ := kubectl(t, "hactl", "explain", name, name+"-1", "-n", ns, "--intent", "replace")
	for what, text := range map[string]string{"json": out + errOut, "table": table + tableErr, "explain": report + reportErr} {
		if strings.Contains(text, password) {
			t.Errorf("the root password appears in %s output", what)
		}
	}

	// A user who may not read the Secret: told which Secret and what to
	// grant, the members not asked.
	user := "bitnami-reader"
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if _, err := s.KC.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.KC.RbacV1().RoleBindings(ns).Delete(ctx, user, metav1.DeleteOptions{}) }()
	out, errOut, code = kubectl(t, "hactl", "status", name, "-n", ns, "-o", "json", "--as", user)
	if code != 4 || !strings.Contains(out+errOut, "credentials_unavailable") || !strings.Contains(out+errOut, `secret "`+scenario.BitnamiSecret(name)+`"`) {
		t.Errorf("without get on the Secret: exit %d, want 4 and credentials_unavailable naming it\n%s%s", code, out, errOut)
	}
}

// A seed of Bitnami's auth-enabled cluster: the capture asks as root with
// the password the StatefulSet names, through a port-forward (hactl hands
// no password to a capture pod, and says so), and the generation it
// publishes is the cluster's: read back from the store without hactl, its
// manifest names the member and cluster the members themselves answer
// with, and every file's digest checks. The password appears nowhere in
// the output.
func TestBitnamiAuthSeed(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "bitnami-auth")
	ctx := context.Background()
	password := bitnamiPassword(t, ns, name)
	s.SetupStore(t, name)
	gen := "auth-1"
	// A generous probe timeout: each member issues root's token through
	// its log, which a loaded machine may hold past the default 2 s (the
	// seed is then refused, cluster_unreachable, and changes nothing).
	r := s.Run(t, 3*time.Minute, "hactl", "seed", name, "--generation", gen, "-n", ns, "--yes", "-o", "json", "--probe-timeout", "10s")
	if r.Code != 0 {
		t.Fatalf("seed of %s: exit %d\n%s\n%s", name, r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "hactl hands no password to a capture pod") {
		t.Errorf("the seed does not say why it captured through a port-forward:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, password) {
		t.Error("the root password appears in the seed's output")
	}
	s3, err := s.SB.S3()
	if err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(s3.URL(), "s3://"+s3.Bucket, "s3://"+s3.Bucket+"/"+name, 1)
	store, err := artifact.OpenStore(ctx, url, artifact.Options{Credentials: &artifact.Credentials{AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, err := store.Verify(ctx, gen, artifact.Expect{}, nil)
	if err != nil {
		t.Fatalf("generation %s does not verify: %v", gen, err)
	}
	src := m.Source.Member
	want := bitnamiAsk(ns, src, password)
	if want == "" || m.Identity.SourceMemberID != want {
		t.Errorf("the generation names member %s of %s; as root %s says %q", m.Identity.SourceMemberID, src, src, want)
	}
}
