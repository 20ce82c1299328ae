package runner

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

type volObjects struct {
	configMaps, secrets map[string]map[string]string
}

func (f volObjects) ConfigMap(name string) (map[string]string, bool, error) {
	d, ok := f.configMaps[name]
	return d, ok, nil
}

func (f volObjects) Secret(name string) (map[string]string, bool, error) {
	d, ok := f.secrets[name]
	return d, ok, nil
}

// PGO's patroni-config volume: two ConfigMaps' patroni.yaml and a
// Secret's two keys under a nested directory, at the items' paths.
func TestProjectedVolume(t *testing.T) {
	obj := volObjects{
		configMaps: map[string]map[string]string{
			"hippo-config":                {"patroni.yaml": "restapi:\n  cafile: /etc/patroni/~postgres-operator/patroni.ca-roots\n", "other": "x"},
			"hippo-instance1-abcd-config": {"patroni.yaml": "postgresql:\n  pgpass: /tmp/.pgpass\n"},
		},
		secrets: map[string]map[string]string{
			"hippo-instance1-abcd-certs": {"patroni.ca-roots": "CA", "patroni.crt-combined": "KEY+CRT", "dns.crt": "CRT"},
		},
	}
	cmItem := func(name, path string) corev1.VolumeProjection {
		return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: "patroni.yaml", Path: path}},
		}}
	}
	v := corev1.Volume{Name: "patroni-config", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			cmItem("hippo-config", "~postgres-operator_cluster.yaml"),
			cmItem("hippo-instance1-abcd-config", "~postgres-operator_instance.yaml"),
			{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "hippo-instance1-abcd-certs"},
				Items: []corev1.KeyToPath{
					{Key: "patroni.ca-roots", Path: "~postgres-operator/patroni.ca-roots"},
					{Key: "patroni.crt-combined", Path: "~postgres-operator/patroni.crt+key"},
				},
			}},
		},
	}}}
	// The API server's kube-api-access volume's token source is left
	// out (the runner gives the token as KUBECONFIG).
	exp := int64(3607)
	v.Projected.Sources = append(v.Projected.Sources, corev1.VolumeProjection{
		ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}})
	files, err := volumeFiles(v, obj)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"~postgres-operator_cluster.yaml":     obj.configMaps["hippo-config"]["patroni.yaml"],
		"~postgres-operator_instance.yaml":    obj.configMaps["hippo-instance1-abcd-config"]["patroni.yaml"],
		"~postgres-operator/patroni.ca-roots": "CA",
		"~postgres-operator/patroni.crt+key":  "KEY+CRT",
	}
	if len(files) != len(want) {
		t.Fatalf("files %+v, want the %d items only", files, len(want))
	}
	for _, f := range files {
		if want[f.path] != f.data {
			t.Errorf("%s = %q, want %q", f.path, f.data, want[f.path])
		}
		if f.secret != (f.path[:len("~postgres-operator/")] == "~postgres-operator/") {
			t.Errorf("%s: secret %v", f.path, f.secret)
		}
	}

	// Written, with the container's mount paths substituted in the
	// content (the files name paths inside the container).
	root := t.TempDir()
	vols := map[string]string{
		"patroni-config": filepath.Join(root, "volumes", "patroni-config"),
		"tmp":            filepath.Join(root, "volumes", "tmp"),
	}
	c := &corev1.Container{Name: "database", VolumeMounts: []corev1.VolumeMount{
		{Name: "patroni-config", MountPath: "/etc/patroni", ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}}
	if err := writeVolumeFiles(vols["patroni-config"], files, mountRewriter(c, vols), nil); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(vols["patroni-config"], filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got, w := read("~postgres-operator_cluster.yaml"), "restapi:\n  cafile: "+vols["patroni-config"]+"/~postgres-operator/patroni.ca-roots\n"; got != w {
		t.Errorf("cluster yaml %q, want %q", got, w)
	}
	if got, w := read("~postgres-operator_instance.yaml"), "postgresql:\n  pgpass: "+vols["tmp"]+"/.pgpass\n"; got != w {
		t.Errorf("instance yaml %q, want %q", got, w)
	}
	if got := read("~postgres-operator/patroni.crt+key"); got != "KEY+CRT" {
		t.Errorf("crt+key %q", got)
	}
	fi, err := os.Stat(filepath.Join(vols["patroni-config"], "~postgres-operator", "patroni.ca-roots"))
	if err != nil || fi.Mode().Perm() != defaultFileMode {
		t.Errorf("ca-roots: %v, %v", fi, err)
	}

	// A missing Secret keeps the pod waiting, unless optional.
	delete(obj.secrets, "hippo-instance1-abcd-certs")
	if _, err := volumeFiles(v, obj); err == nil {
		t.Error("no error for a missing Secret")
	}
	yes := true
	v.Projected.Sources[2].Secret.Optional = &yes
	if files, err := volumeFiles(v, obj); err != nil || len(files) != 2 {
		t.Errorf("optional Secret missing: %d files, %v", len(files), err)
	}
}

// A Secret volume's items and default mode, and a ConfigMap's keys
// without items.
func TestSecretVolumeItemsAndMode(t *testing.T) {
	obj := volObjects{
		configMaps: map[string]map[string]string{"cm": {"a": "1", "b": "2"}},
		secrets:    map[string]map[string]string{"s": {"tls.crt": "C", "tls.key": "K"}},
	}
	mode := int32(0o400)
	keyMode := int32(0o600)
	v := corev1.Volume{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "s", DefaultMode: &mode,
		Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "client/cert.pem"}, {Key: "tls.key", Path: "client/key.pem", Mode: &keyMode}},
	}}}
	files, err := volumeFiles(v, obj)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := writeVolumeFiles(dir, files, nil, nil); err != nil {
		t.Fatal(err)
	}
	for p, m := range map[string]os.FileMode{"client/cert.pem": 0o400, "client/key.pem": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil || fi.Mode().Perm() != m {
			t.Errorf("%s: %v, %v; want mode %v", p, fi, err, m)
		}
	}
	cm := corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}
	if files, err := volumeFiles(cm, obj); err != nil || len(files) != 2 || files[0].path != "a" || files[0].secret {
		t.Errorf("ConfigMap without items: %+v, %v", files, err)
	}
	bad := corev1.Volume{Name: "x", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "a", Path: "../a"}}}}}
	if _, err := volumeFiles(bad, obj); err == nil {
		t.Error("an item path leaving the volume was accepted")
	}
}
