package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hactl-dev/hactl/model"
	"github.com/hactl-dev/hactl/sandbox/cnpgstandin"
	"github.com/hactl-dev/hactl/sandbox/druidstandin"
	"github.com/hactl-dev/hactl/sandbox/spilostandin"
)

// etcd-druid's marks on the objects it creates (github.com/gardener/
// etcd-druid, api/core/v1alpha1/constants.go, helper.go): every one is
// labelled app.kubernetes.io/managed-by=etcd-druid; its member pods are
// controlled by the StatefulSet <etcd>, which its Etcd controls.
const (
	DruidManagedByLabel = "app.kubernetes.io/managed-by"
	DruidManagedBy      = "etcd-druid"
	// DruidSelector selects the pods and StatefulSets of the runner's
	// druid watch.
	DruidSelector = DruidManagedByLabel + "=" + DruidManagedBy + ",!" + EngineLabel
	// DruidGroup and DruidEtcdKind are the API group and kind of druid's
	// Etcd, the controller of a member pod's StatefulSet.
	DruidGroup    = "druid.gardener.cloud"
	DruidEtcdKind = "Etcd"
	// DruidMemberQuery is the jq query (a kwok Stage selector's key) that
	// yields something exactly for the pods IsDruidMember reports:
	// DoesNotExist selects the others.
	DruidMemberQuery = `select(.metadata.labels["` + DruidManagedByLabel + `"] == "` + DruidManagedBy + `") | ` +
		`.metadata.ownerReferences[]? | select(.controller == true and .kind == "StatefulSet") | .name`
)

// IsDruidMember reports whether pod looks like one of etcd-druid's member
// pods: labelled managed-by etcd-druid and controlled by a StatefulSet.
// The runner runs it once that StatefulSet is known to be controlled by
// an Etcd (druidSetOwned).
func IsDruidMember(pod *corev1.Pod) bool {
	if pod.Labels[DruidManagedByLabel] != DruidManagedBy {
		return false
	}
	_, ok := controllerOf(pod.OwnerReferences, "StatefulSet")
	return ok
}

func controllerOf(refs []metav1.OwnerReference, kind string) (metav1.OwnerReference, bool) {
	for _, o := range refs {
		if o.Controller != nil && *o.Controller && o.Kind == kind {
			return o, true
		}
	}
	return metav1.OwnerReference{}, false
}

// druidSet returns the StatefulSet controlling druid member pod, if the
// runner knows it and an Etcd of druid's group controls it.
func (r *Runner) druidSet(pod *corev1.Pod) (*appsv1.StatefulSet, bool) {
	ref, ok := controllerOf(pod.OwnerReferences, "StatefulSet")
	if !ok {
		return nil, false
	}
	o, ok, err := r.druidSets.GetStore().GetByKey(pod.Namespace + "/" + ref.Name)
	if err != nil || !ok {
		return nil, false
	}
	s := o.(*appsv1.StatefulSet)
	if s.UID != ref.UID {
		return nil, false
	}
	etcd, ok := controllerOf(s.OwnerReferences, DruidEtcdKind)
	if !ok {
		return nil, false
	}
	g, _, _ := strings.Cut(etcd.APIVersion, "/")
	return s, g == DruidGroup
}

// druidPending re-observes a druid pod whose StatefulSet the runner does
// not know yet.
func (r *Runner) druidPending(pod *corev1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	time.AfterFunc(500*time.Millisecond, func() {
		select {
		case <-r.shutdown:
			return
		default:
		}
		if o, ok, err := r.druid.GetStore().GetByKey(key); err == nil && ok {
			r.observe(o)
		}
	})
}

// standInHosts are the DNS names a stand-in of druid pod may meet, with
// their sandbox addresses: its StatefulSet's pods under the governing
// Service (every form the resolver accepts), and its host aliases for
// 127.0.0.1 (druid's <etcd>-local), which stand for its own address.
func (r *Runner) standInHosts(pod *corev1.Pod, self string) map[string]string {
	hosts := map[string]string{}
	for _, a := range pod.Spec.HostAliases {
		if a.IP == "127.0.0.1" {
			for _, h := range a.Hostnames {
				hosts[strings.ToLower(h)] = self
			}
		}
	}
	s, ok := r.druidSet(pod)
	if !ok || s.Spec.Replicas == nil || s.Spec.ServiceName == "" {
		return hosts
	}
	for i := range int(*s.Spec.Replicas) {
		name := fmt.Sprintf("%s-%d", s.Name, i)
		a, err := r.addrs.For(s.Namespace, name)
		if err != nil {
			continue
		}
		base := name + "." + s.Spec.ServiceName
		for _, h := range []string{base, base + "." + s.Namespace, base + "." + s.Namespace + ".svc", base + "." + s.Namespace + ".svc.cluster.local"} {
			hosts[h] = a.Address
		}
	}
	return hosts
}

// standInImages are the images whose containers run a stand-in, by the
// image's base name.
var standInImages = map[string]string{
	"etcd-wrapper": druidstandin.WrapperCommand,
	"etcdbrctl":    druidstandin.BackupRestoreCommand,
}

// standIn returns the stand-in command of container c's image, if any.
func standIn(c *corev1.Container) (string, bool) {
	cmd, ok := standInImages[model.ImageBase(c.Image)]
	return cmd, ok
}

// standInContext is the druidstandin.Context of container c of pe.Pod, as
// the value of druidstandin.ContextEnv.
func standInContext(pe PodEnv, c *corev1.Container) (string, error) {
	sc := druidstandin.Context{Address: pe.Address, PeerAddress: pe.PeerAddress, Hosts: pe.Hosts, Mounts: map[string]string{}}
	for _, m := range c.VolumeMounts {
		d, ok := pe.Volumes[m.Name]
		if !ok {
			return "", fmt.Errorf("volume %s is not available", m.Name)
		}
		if m.SubPath != "" {
			d = filepath.Join(d, m.SubPath)
		}
		sc.Mounts[filepath.Clean(m.MountPath)] = d
	}
	b, err := json.Marshal(sc)
	return string(b), err
}

// linkStandIns makes dir/<command> a link to program for each stand-in
// command (etcd-druid's, Spilo's and CloudNativePG's instance
// manager's), and returns dir.
func linkStandIns(program, dir string) (string, error) {
	abs, err := filepath.Abs(program)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, name := range slices.Concat(druidstandin.Commands(), spilostandin.Commands(), cnpgstandin.Commands()) {
		link := filepath.Join(dir, name)
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if err := os.Symlink(abs, link); err != nil {
			return "", fmt.Errorf("runner: linking the stand-in %s: %w", name, err)
		}
	}
	return dir, nil
}
