package runner

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var (
	portForwardGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "portforwards"}
	logsGVR        = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}
)

// containerPorts lists the TCP ports port-forwards reach in the pod's
// containers: those they declare and, in a hostNetwork pod, those they
// listen on (forwardPorts).
func containerPorts(pod *corev1.Pod) []int {
	var out []int
	seen := map[int]bool{}
	for _, c := range pod.Spec.Containers {
		for _, p := range forwardPorts(pod, c) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// portForwardObject is the kwok PortForward that makes `kubectl
// port-forward pod/<name> <port>` reach the member: every port of
// containerPorts (kwok matches a forward by the requested port, whether
// or not the pod declares it) forwards to the same port at address (the member's
// forward address, where the forward proxy relays to its own address;
// for the peer port that is the peer proxy).
func portForwardObject(pod *corev1.Pod, address string) *unstructured.Unstructured {
	var forwards []any
	for _, p := range containerPorts(pod) {
		forwards = append(forwards, map[string]any{
			"ports":  []any{int64(p)},
			"target": map[string]any{"address": address, "port": int64(p)},
		})
	}
	if forwards == nil {
		forwards = []any{}
	}
	return kwokObject("PortForward", pod, map[string]any{"forwards": forwards})
}

// logsObject is the kwok Logs object that makes `kubectl logs` (and
// --previous) read each container's log files.
func logsObject(pod *corev1.Pod, files map[string][2]string) *unstructured.Unstructured {
	var logs []any
	for _, c := range pod.Spec.Containers {
		f, ok := files[c.Name]
		if !ok {
			continue
		}
		l := map[string]any{"containers": []any{c.Name}, "logsFile": f[0], "follow": true}
		if f[1] != "" {
			l["previousLogsFile"] = f[1]
		}
		logs = append(logs, l)
	}
	if logs == nil {
		logs = []any{}
	}
	return kwokObject("Logs", pod, map[string]any{"logs": logs})
}

func kwokObject(kind string, pod *corev1.Pod, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       kind,
		"spec":       spec,
	}}
	u.SetName(pod.Name)
	u.SetNamespace(pod.Namespace)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "hactl-sandbox"})
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}})
	return u
}

// ensureObject creates obj, or replaces an existing one whose owner or
// spec differ (a previous incarnation of the pod left it behind; the
// garbage collector may delete that one at any moment, hence the retry).
func ensureObject(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	ri := dyn.Resource(gvr).Namespace(obj.GetNamespace())
	var err error
	for range 3 {
		_, err = ri.Create(ctx, obj, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		var cur *unstructured.Unstructured
		cur, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if reflect.DeepEqual(cur.GetOwnerReferences(), obj.GetOwnerReferences()) && reflect.DeepEqual(cur.Object["spec"], obj.Object["spec"]) {
			return nil
		}
		upd := obj.DeepCopy()
		upd.SetResourceVersion(cur.GetResourceVersion())
		upd.SetUID(cur.GetUID())
		_, err = ri.Update(ctx, upd, metav1.UpdateOptions{})
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}
