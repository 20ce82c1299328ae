package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/status"
)

// TestReportWithholdsEveryCanary: `kubectl hactl report` of a Patroni
// cluster of real members, after the test has planted known canaries
// where credentials hide in the field — the value of a Secret a pod
// names (in an Event's message and a ConfigMap), a password in a URL, a
// private key, a literal token in a pod's environment, a flag's
// argument — writes an archive in which no canary appears in any file or
// file name, while the status document, the objects and each member's
// own documents (Patroni's /cluster) are there and REDACTIONS.txt says
// what was withheld. Bad input loses nothing.
func TestReportWithholdsEveryCanary(t *testing.T) {
	skipShort(t)
	name, ns := cluster(t, "pg-healthy")
	ctx := context.Background()
	const (
		secretCanary = "CanarySecretV4lue9"
		urlCanary    = "CanaryUrlPass7"
		envCanary    = "CanaryEnvToken3"
		argCanary    = "CanaryArgPw5"
		keyCanary    = "CanaryPemKey8"
	)
	canaries := []string{secretCanary, urlCanary, envCanary, argCanary, keyCanary}
	// The Secret's value ends in characters JSON escapes (status.json
	// and history.json hold the Event below as \u003c…): the canary's
	// head shows whether the escaped value got through.
	secretValue := secretCanary + `<&>"`
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "report-canary", Namespace: ns}, Data: map[string][]byte{"password": []byte(secretValue)}}
	if _, err := s.KC.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pod of hactl's own for the cluster (as a capture pod is): it
	// names the Secret and carries a literal token and a flag's value.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "report-canary", Namespace: ns, Labels: map[string]string{status.LabelCluster: name}},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{
				Name: "c", Image: "example.invalid/none",
				Command: []string{"tool", "--password", argCanary},
				Env: []corev1.EnvVar{
					{Name: "API_TOKEN", Value: envCanary},
					{Name: "PGPASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "report-canary"}, Key: "password"}}},
				},
			}},
		},
	}
	if _, err := s.KC.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An engine ConfigMap (Patroni's labels) with a URL, a private key
	// and the Secret's value in prose.
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "report-canary", Namespace: ns, Labels: map[string]string{"application": "patroni", "cluster-name": name}},
		Data: map[string]string{
			"backup":  "s3://backup:" + urlCanary + "@minio.example:9000/pg",
			"tls.key": "-----BEGIN PRIVATE KEY-----\nMIIE" + keyCanary + "\n-----END PRIVATE KEY-----\n",
			"notes":   "the old one was " + secretValue + ", rotated",
		},
	}
	if _, err := s.KC.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "report-canary", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name + "-0"},
		Reason:         "Canary", Message: "connect failed with " + secretValue, Type: "Warning",
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1, Source: corev1.EventSource{Component: "report-test"},
	}
	if _, err := s.KC.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.KC.CoreV1().Pods(ns).Delete(ctx, "report-canary", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		_ = s.KC.CoreV1().ConfigMaps(ns).Delete(ctx, "report-canary", metav1.DeleteOptions{})
		_ = s.KC.CoreV1().Events(ns).Delete(ctx, "report-canary", metav1.DeleteOptions{})
		_ = s.KC.CoreV1().Secrets(ns).Delete(ctx, "report-canary", metav1.DeleteOptions{})
	})

	dir := t.TempDir()
	file := filepath.Join(dir, "r.zip")
	out, errOut, code := kubectl(t, "hactl", "report", name, "-n", ns, "--include-logs", "--since", "2h", "-o", file)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s%s", code, out, errOut)
	}
	zr, err := zip.OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		rel := f.Name[strings.Index(f.Name, "/")+1:]
		files[rel] = b
		for _, c := range canaries {
			if strings.Contains(f.Name, c) || bytes.Contains(b, []byte(c)) {
				t.Errorf("%s holds the canary %s", f.Name, c)
			}
		}
	}
	// What a second engineer needs is there.
	var doc status.ClusterStatus
	if err := json.Unmarshal(files["status.json"], &doc); err != nil || doc.Kind != "ClusterStatus" || doc.Metadata.Name != name {
		t.Errorf("status.json: %v %+v", err, doc.Metadata)
	}
	for _, want := range []string{"status.txt", "observation.json", "history.json", "objects/statefulset.yaml", "objects/pods.yaml", "objects/events.yaml",
		"objects/configmaps.yaml", "hactl/lock.yaml", "REDACTIONS.txt", "README.txt",
		"members/" + name + "-0/cluster.json", "members/" + name + "-1/history.json", "members/" + name + "-2/config.json", "logs/" + name + "-0/patroni.log"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the archive lacks %s", want)
		}
	}
	if !bytes.Contains(files["members/"+name+"-0/cluster.json"], []byte(`"members"`)) {
		t.Errorf("cluster.json is not Patroni's /cluster:\n%s", files["members/"+name+"-0/cluster.json"])
	}
	for _, p := range []string{name + "-0", name + "-1", name + "-2", "report-canary"} {
		if !bytes.Contains(files["objects/pods.yaml"], []byte("name: "+p+"\n")) {
			t.Errorf("objects/pods.yaml lacks pod %s", p)
		}
	}
	if !bytes.Contains(files["objects/events.yaml"], []byte("reason: Canary")) || !bytes.Contains(files["objects/configmaps.yaml"], []byte(name+"-leader")) {
		t.Errorf("the planted event or Patroni's leader ConfigMap is missing")
	}
	red := string(files["REDACTIONS.txt"])
	for _, want := range []string{"Secret " + ns + "/report-canary", "the value of a Secret", "password in a URL", "private key (PEM block)",
		"value of an environment variable named like a credential (API_TOKEN)", "argument of a flag named like a credential (password)"} {
		if !strings.Contains(red, want) {
			t.Errorf("REDACTIONS.txt does not say %q:\n%s", want, red)
		}
	}

	// Bad input: a clear error, and nothing lost or left behind.
	t.Run("an existing file is never overwritten", func(t *testing.T) {
		before, _ := os.ReadFile(file)
		_, errOut, code := kubectl(t, "hactl", "report", name, "-n", ns, "-o", file)
		after, _ := os.ReadFile(file)
		if code != 2 || !strings.Contains(errOut, "exists") || !bytes.Equal(before, after) {
			t.Errorf("exit %d, %q; file kept: %v", code, errOut, bytes.Equal(before, after))
		}
	})
	t.Run("unknown cluster", func(t *testing.T) {
		f := filepath.Join(dir, "none.zip")
		_, errOut, code := kubectl(t, "hactl", "report", "no-such-cluster", "-n", ns, "-o", f)
		if _, err := os.Stat(f); code != 1 || !strings.Contains(errOut, `no HA cluster "no-such-cluster"`) || err == nil {
			t.Errorf("exit %d, %q, file written: %v", code, errOut, err == nil)
		}
	})
	t.Run("--since without logs", func(t *testing.T) {
		_, errOut, code := kubectl(t, "hactl", "report", name, "-n", ns, "--since", "1h", "-o", filepath.Join(dir, "x.zip"))
		if code != 2 || !strings.Contains(errOut, "--include-logs") {
			t.Errorf("exit %d, %q", code, errOut)
		}
	})
	t.Run("to stdout", func(t *testing.T) {
		out, errOut, code := kubectl(t, "hactl", "report", name, "-n", ns, "--no-probe", "-o", "-")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		zr, err := zip.NewReader(bytes.NewReader([]byte(out)), int64(len(out)))
		if err != nil || len(zr.File) < 10 {
			t.Fatalf("not a zip archive (%v)", err)
		}
	})
}
