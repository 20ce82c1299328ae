package volumes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func claim(mutate func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	sc := StorageClass
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-etcd-0", Namespace: "demo", UID: "0123456789abcdef"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &sc,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
		},
	}
	if mutate != nil {
		mutate(pvc)
	}
	return pvc
}

func TestWants(t *testing.T) {
	other := "standard"
	now := metav1.Now()
	for name, tc := range map[string]struct {
		mutate func(*corev1.PersistentVolumeClaim)
		want   bool
	}{
		"pending claim of our class": {nil, true},
		"already bound":              {func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = "pv" }, false},
		"other class":                {func(p *corev1.PersistentVolumeClaim) { p.Spec.StorageClassName = &other }, false},
		"no class":                   {func(p *corev1.PersistentVolumeClaim) { p.Spec.StorageClassName = nil }, false},
		"being deleted":              {func(p *corev1.PersistentVolumeClaim) { p.DeletionTimestamp = &now }, false},
	} {
		if got := Wants(claim(tc.mutate)); got != tc.want {
			t.Errorf("%s: Wants = %v", name, got)
		}
	}
}

func TestVolumeIsPreBoundToTheClaim(t *testing.T) {
	pvc := claim(nil)
	dir := Dir("/root/v", pvc)
	if dir != "/root/v/demo/data-etcd-0-01234567" {
		t.Fatalf("dir %s", dir)
	}
	pv := Volume(pvc, dir)
	if pv.Name != "pvc-0123456789abcdef" || pv.Spec.HostPath.Path != dir || pv.Spec.StorageClassName != StorageClass {
		t.Fatalf("pv %+v", pv)
	}
	ref := pv.Spec.ClaimRef
	if ref.Namespace != "demo" || ref.Name != "data-etcd-0" || ref.UID != pvc.UID {
		t.Fatalf("claimRef %+v", ref)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "2Gi" {
		t.Fatalf("capacity %s", q.String())
	}
}

func TestReleasable(t *testing.T) {
	pv := Volume(claim(nil), "/root/v/x")
	gone := func(string, string, types.UID) bool { return false }
	there := func(string, string, types.UID) bool { return true }
	if !Releasable(pv, gone) {
		t.Error("volume of a deleted claim not releasable")
	}
	if Releasable(pv, there) {
		t.Error("volume of a live claim releasable")
	}
	pv.Status.Phase = corev1.VolumeReleased
	if !Releasable(pv, there) {
		t.Error("Released volume not releasable")
	}
	pv.Annotations = nil
	if Releasable(pv, gone) {
		t.Error("someone else's volume releasable")
	}
}

func TestWithin(t *testing.T) {
	for dir, want := range map[string]bool{
		"/r/v/ns/x":  true,
		"/r/v":       false,
		"/r/vx/ns":   false,
		"/r/v/../w":  false,
		"/elsewhere": false,
	} {
		if got := within("/r/v", dir); got != want {
			t.Errorf("within(%s) = %v", dir, got)
		}
	}
}
