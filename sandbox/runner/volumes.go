package runner

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A kubelet's defaults for the files of ConfigMap, Secret and projected
// volumes (corev1.ConfigMapVolumeSourceDefaultMode and the like).
const defaultFileMode = 0o644

// volumeFile is one file a ConfigMap, Secret or projected volume holds:
// its path in the volume, content and mode, and whether it came from a
// Secret.
type volumeFile struct {
	path   string
	data   string
	mode   os.FileMode
	secret bool
}

// volumeFiles lists the files of volume v as a kubelet lays them out:
// every key of a ConfigMap or Secret under its own name, or only the
// items' keys at the items' paths (nested directories included); a
// projected volume's sources one after the other, a later source's file
// replacing an earlier one's at the same path (sources other than
// ConfigMaps and Secrets are left out). Items' modes, else the
// volume's default mode, else 0644. A missing object or key that is not
// optional is an error.
func volumeFiles(v corev1.Volume, obj Objects) ([]volumeFile, error) {
	files := map[string]volumeFile{}
	add := func(kind, name string, data map[string]string, found bool, items []corev1.KeyToPath, optional *bool, defMode *int32, secret bool) error {
		opt := optional != nil && *optional
		if !found {
			if opt {
				return nil
			}
			return fmt.Errorf("%s %s not found", kind, name)
		}
		mode := os.FileMode(defaultFileMode)
		if defMode != nil {
			mode = os.FileMode(*defMode) & os.ModePerm
		}
		if len(items) == 0 {
			for k, val := range data {
				files[k] = volumeFile{path: k, data: val, mode: mode, secret: secret}
			}
			return nil
		}
		for _, it := range items {
			val, ok := data[it.Key]
			if !ok {
				if opt {
					continue
				}
				return fmt.Errorf("%s %s has no key %q", kind, name, it.Key)
			}
			p := path.Clean(it.Path)
			if p == "." || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
				return fmt.Errorf("%s %s: item path %q leaves the volume", kind, name, it.Path)
			}
			m := mode
			if it.Mode != nil {
				m = os.FileMode(*it.Mode) & os.ModePerm
			}
			files[p] = volumeFile{path: p, data: val, mode: m, secret: secret}
		}
		return nil
	}
	configMap := func(name string, items []corev1.KeyToPath, optional *bool, mode *int32) error {
		data, found, err := obj.ConfigMap(name)
		if err != nil {
			return err
		}
		return add("ConfigMap", name, data, found, items, optional, mode, false)
	}
	secret := func(name string, items []corev1.KeyToPath, optional *bool, mode *int32) error {
		data, found, err := obj.Secret(name)
		if err != nil {
			return err
		}
		return add("Secret", name, data, found, items, optional, mode, true)
	}
	switch {
	case v.ConfigMap != nil:
		if err := configMap(v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, v.ConfigMap.DefaultMode); err != nil {
			return nil, err
		}
	case v.Secret != nil:
		if err := secret(v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, v.Secret.DefaultMode); err != nil {
			return nil, err
		}
	case v.Projected != nil:
		apiAccess := slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool { return s.ServiceAccountToken != nil })
		for _, src := range v.Projected.Sources {
			var err error
			switch {
			case src.ConfigMap != nil && apiAccess && src.ConfigMap.Name == "kube-root-ca.crt":
				// An API-access volume's CA (the containers get it in
				// their KUBECONFIG): written when the controller manager
				// has published it, never waited for.
				yes := true
				err = configMap(src.ConfigMap.Name, src.ConfigMap.Items, &yes, v.Projected.DefaultMode)
			case src.ConfigMap != nil:
				err = configMap(src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, v.Projected.DefaultMode)
			case src.Secret != nil:
				err = secret(src.Secret.Name, src.Secret.Items, src.Secret.Optional, v.Projected.DefaultMode)
			case src.ServiceAccountToken != nil || src.DownwardAPI != nil:
				// A hand-made kube-api-access volume (CloudNativePG's
				// pods: automountServiceAccountToken false, the token,
				// kube-root-ca.crt and the namespace projected): the
				// token reaches the container as KUBECONFIG (see
				// automounts); the token and downward API files are not
				// written.
			default:
				// A ServiceAccount token (the API server's
				// kube-api-access-* volume), downward API or trust
				// bundle: left out. The runner gives containers their
				// token as KUBECONFIG instead.
			}
			if err != nil {
				return nil, err
			}
		}
	}
	out := make([]volumeFile, 0, len(files))
	for _, f := range files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// writeVolumeFiles writes files under dir, creating the directories
// their paths name. rewrite, when set, rewrites a file's content (see
// mountRewriter). owner, when set (the runner runs as root and the pod
// asks for a user), owns the Secrets' files, so that the pod's user reads
// them whatever their mode, as a kubelet gives them to the pod's fsGroup.
func writeVolumeFiles(dir string, files []volumeFile, rewrite func(string) string, owner *identity) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		data := f.data
		if rewrite != nil {
			data = rewrite(data)
		}
		_ = os.Remove(p) // a rewrite keeps no stale mode
		if err := os.WriteFile(p, []byte(data), f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil { // past the umask
			return err
		}
		if f.secret && owner != nil {
			if err := os.Chown(p, int(owner.uid), int(owner.gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// mountRewriter returns the substitution of the mount paths of container
// c (mounted from the host directories vols) in the content of the files
// of a projected volume: those files name paths inside the container
// (PGO's Patroni configuration names its certificate files under
// /etc/patroni, its pgpass under /tmp and its WAL directory under
// /pgdata), which on this host are the volumes' directories, as the
// runner substitutes them in the container's arguments and environment.
// It returns nil when c mounts a volume missing from vols.
func mountRewriter(c *corev1.Container, vols map[string]string) func(string) string {
	s, err := newSubstituter(PodEnv{Volumes: vols}, c)
	if err != nil {
		return nil
	}
	return s.paths
}

// mounting returns the first container (init containers first) of pod
// that mounts the volume name.
func mounting(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			for _, m := range list[i].VolumeMounts {
				if m.Name == name {
					return &list[i]
				}
			}
		}
	}
	return nil
}
