package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

const (
	// StorageClass is the name of the sandbox's default StorageClass.
	StorageClass = "hactl-sandbox"
	// ProvisionerName is the StorageClass's provisioner name, and the value of
	// the pv.kubernetes.io/provisioned-by annotation on its volumes.
	ProvisionerName = "hactl.dev/sandbox-hostpath"

	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	annDefaultClass  = "storageclass.kubernetes.io/is-default-class"
)

// StorageClassObject is the sandbox's default StorageClass.
func StorageClassObject() *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimDelete
	mode := storagev1.VolumeBindingImmediate
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClass, Annotations: map[string]string{annDefaultClass: "true"}},
		Provisioner:       ProvisionerName,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &mode,
	}
}

// Dir is where the claim's data lives under root.
func Dir(root string, pvc *corev1.PersistentVolumeClaim) string {
	uid := string(pvc.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return filepath.Join(root, pvc.Namespace, pvc.Name+"-"+uid)
}

// VolumeName is the PersistentVolume's name for a claim.
func VolumeName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

// Wants reports whether the provisioner should provision pvc: it is of the
// sandbox's class, unbound, and not being deleted.
func Wants(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.Spec.StorageClassName != nil && *pvc.Spec.StorageClassName == StorageClass &&
		pvc.Spec.VolumeName == "" && pvc.DeletionTimestamp == nil
}

// Volume builds the hostPath PersistentVolume for pvc at dir, pre-bound to
// the claim by claimRef.
func Volume(pvc *corev1.PersistentVolumeClaim, dir string) *corev1.PersistentVolume {
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	hostType := corev1.HostPathDirectoryOrCreate
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        VolumeName(pvc),
			Annotations: map[string]string{annProvisionedBy: ProvisionerName},
			Labels:      map[string]string{"hactl.dev/sandbox-volume": "true"},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              StorageClass,
			VolumeMode:                    pvc.Spec.VolumeMode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostType},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind:       "PersistentVolumeClaim",
				APIVersion: "v1",
				Namespace:  pvc.Namespace,
				Name:       pvc.Name,
				UID:        pvc.UID,
			},
		},
	}
}

// Releasable reports whether pv is one of ours whose claim is gone (the
// PV controller marks it Released, or the claimed UID no longer exists),
// so its directory and the volume itself can go.
func Releasable(pv *corev1.PersistentVolume, claimExists func(ns, name string, uid types.UID) bool) bool {
	if pv.Annotations[annProvisionedBy] != ProvisionerName || pv.DeletionTimestamp != nil {
		return false
	}
	if pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed {
		return true
	}
	ref := pv.Spec.ClaimRef
	return ref != nil && !claimExists(ref.Namespace, ref.Name, ref.UID)
}

// Provisioner provisions and reclaims the sandbox's volumes.
type Provisioner struct {
	kc   kubernetes.Interface
	root string
	logf func(format string, args ...any)

	factory informers.SharedInformerFactory
	pvcs    cache.SharedIndexInformer
	pvs     cache.SharedIndexInformer
	kick    chan struct{}

	mu     sync.Mutex
	failed map[string]string // last error per object, logged once
}

// New returns a provisioner keeping its directories under root.
func New(kc kubernetes.Interface, root string, logf func(string, ...any)) *Provisioner {
	f := informers.NewSharedInformerFactory(kc, 0)
	p := &Provisioner{
		kc: kc, root: root, logf: logf, factory: f,
		pvcs:   f.Core().V1().PersistentVolumeClaims().Informer(),
		pvs:    f.Core().V1().PersistentVolumes().Informer(),
		kick:   make(chan struct{}, 1),
		failed: map[string]string{},
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.poke() },
		UpdateFunc: func(any, any) { p.poke() },
		DeleteFunc: func(any) { p.poke() },
	}
	_, _ = p.pvcs.AddEventHandler(h)
	_, _ = p.pvs.AddEventHandler(h)
	return p
}

func (p *Provisioner) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run installs the StorageClass and provisions until ctx ends.
func (p *Provisioner) Run(ctx context.Context) error {
	if err := os.MkdirAll(p.root, 0o755); err != nil {
		return err
	}
	if _, err := p.kc.StorageV1().StorageClasses().Create(ctx, StorageClassObject(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass: %w", err)
	}
	p.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), p.pvcs.HasSynced, p.pvs.HasSynced) {
		return ctx.Err()
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		p.sync(ctx)
		select {
		case <-ctx.Done():
			p.factory.Shutdown()
			return nil
		case <-p.kick:
		case <-tick.C:
		}
	}
}

// sync provisions wanted claims and reclaims released volumes.
func (p *Provisioner) sync(ctx context.Context) {
	for _, o := range p.pvcs.GetStore().List() {
		pvc := o.(*corev1.PersistentVolumeClaim)
		if !Wants(pvc) {
			continue
		}
		if _, exists, _ := p.pvs.GetStore().GetByKey(VolumeName(pvc)); exists {
			continue
		}
		p.note(pvc.Namespace+"/"+pvc.Name, p.provision(ctx, pvc))
	}
	exists := func(ns, name string, uid types.UID) bool {
		o, ok, _ := p.pvcs.GetStore().GetByKey(ns + "/" + name)
		return ok && o.(*corev1.PersistentVolumeClaim).UID == uid
	}
	for _, o := range p.pvs.GetStore().List() {
		pv := o.(*corev1.PersistentVolume)
		if Releasable(pv, exists) {
			p.note(pv.Name, p.reclaim(ctx, pv))
		}
	}
}

func (p *Provisioner) note(key string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		delete(p.failed, key)
		return
	}
	if p.failed[key] != err.Error() {
		p.failed[key] = err.Error()
		p.logf("volumes: %s: %v", key, err)
	}
}

func (p *Provisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	dir := Dir(p.root, pvc)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	_, err := p.kc.CoreV1().PersistentVolumes().Create(ctx, Volume(pvc, dir), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		p.logf("volumes: provisioned %s for %s/%s at %s", VolumeName(pvc), pvc.Namespace, pvc.Name, dir)
	}
	return err
}

// reclaim removes the volume's directory, then the volume.
func (p *Provisioner) reclaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.HostPath == nil {
		return errors.New("not a hostPath volume")
	}
	dir := pv.Spec.HostPath.Path
	if !within(p.root, dir) {
		return fmt.Errorf("refusing to remove %s: outside %s", dir, p.root)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	uid := pv.UID
	err := p.kc.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	p.logf("volumes: reclaimed %s (removed %s)", pv.Name, dir)
	return nil
}

func within(root, dir string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel)
}

// HostDir returns the host directory of the volume bound to the claim
// ns/name, or "" while the claim is not bound to one of the sandbox's
// volumes.
func (p *Provisioner) HostDir(ns, name string) string {
	o, ok, _ := p.pvcs.GetStore().GetByKey(ns + "/" + name)
	if !ok {
		return ""
	}
	pvc := o.(*corev1.PersistentVolumeClaim)
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound || pvc.DeletionTimestamp != nil {
		return ""
	}
	vo, ok, _ := p.pvs.GetStore().GetByKey(pvc.Spec.VolumeName)
	if !ok {
		return ""
	}
	pv := vo.(*corev1.PersistentVolume)
	if pv.Spec.HostPath == nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return ""
	}
	return pv.Spec.HostPath.Path
}
