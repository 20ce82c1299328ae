package e2esuite

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hactl-dev/hactl/internal/fixtures"
	"github.com/hactl-dev/hactl/status"
)

// AsHTTP lets cluster ns/name, whose members speak engine native, be
// read through the http engine: it creates a ConfigMap holding the
// shipped mapping for native (removed when t ends) and returns it with
// relabel, which labels the StatefulSet hactl.dev/engine=http and names
// the mapping (on) or puts its own label back (off). The label is put
// back when t ends too.
func (s *Suite) AsHTTP(t testing.TB, ns, name, native string) (*corev1.ConfigMap, func(on bool)) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-http-mapping"}, Data: fixtures.HTTPMapping(t, native)}
	if _, err := s.KC.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.KC.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}) })
	sts, err := s.KC.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	label, labelled := sts.Labels[status.LabelEngine]
	relabel := func(on bool) {
		t.Helper()
		lv, av := "null", "null"
		switch {
		case on:
			lv, av = strconv.Quote("http"), strconv.Quote(cm.Name)
		case labelled:
			lv = strconv.Quote(label)
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s},"annotations":{%q:%s}}}`, status.LabelEngine, lv, status.AnnotationEngineConfig, av)
		if _, err := s.KC.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("relabelling %s: %v", name, err)
		}
	}
	t.Cleanup(func() { relabel(false) })
	return cm, relabel
}
