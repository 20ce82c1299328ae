package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeContext is the name of the context (and cluster and user) in the
// kubeconfig the runner gives a pod as KUBECONFIG, for clients that do
// not follow current-context (Patroni 3.0.2 defaults to "kind-kind":
// pass this name as PATRONI_KUBERNETES_CONTEXT).
const KubeContext = "hactl-sandbox"

// tokenLifetime is how long a pod's ServiceAccount token is valid. A
// new one is requested at every container start.
const tokenLifetime = 7 * 24 * time.Hour

// automounts reports whether pod gets its ServiceAccount's token, as a
// kubelet decides (the pod's automountServiceAccountToken, default true).
func automounts(pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		return true
	}
	// A pod that projects its ServiceAccount's token itself (cnpg's
	// kube-api-access volume) gets it too.
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}

// writeKubeconfig requests a token for pod's ServiceAccount, bound to the
// pod (it stops working once the pod is deleted), and writes a kubeconfig
// with it to path (mode 0600): the container acts with its
// ServiceAccount's RBAC, as it would with the token a kubelet mounts.
func (r *Runner) writeKubeconfig(ctx context.Context, pod *corev1.Pod, path string) error {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	secs := int64(tokenLifetime / time.Second)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := r.o.Kube.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &secs,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for ServiceAccount %s: %w", sa, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeContext] = &clientcmdapi.Cluster{Server: r.o.Server, CertificateAuthorityData: r.o.CA}
	cfg.AuthInfos[KubeContext] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[KubeContext] = &clientcmdapi.Context{Cluster: KubeContext, AuthInfo: KubeContext, Namespace: pod.Namespace}
	cfg.CurrentContext = KubeContext
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
