package kwok

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/sandbox/internal/proc"
)

const (
	// NodeAnnotation marks the nodes kwok manages (value NodeAnnotationValue).
	NodeAnnotation      = "kwok.x-k8s.io/node"
	NodeAnnotationValue = "fake"
	// NodeIP is every fake node's InternalIP: kwok's server listens there.
	NodeIP = "127.0.0.1"
	// leaseSeconds is the node Lease duration kwok keeps renewed.
	leaseSeconds = 40
	stopGrace    = 5 * time.Second
)

// Options configures the kwok controller.
type Options struct {
	// BinDir holds the kwok binary.
	BinDir string
	// Dir receives logs/kwok.log and pids/kwok.pid.
	Dir string
	// Kubeconfig is an admin kubeconfig for the API server.
	Kubeconfig string
	// CertFile and KeyFile are kwok's serving certificate (for NodeIP).
	CertFile, KeyFile string
}

// Kwok is a running kwok controller.
type Kwok struct {
	// Port is the kubelet API port every fake node advertises.
	Port int
	proc *proc.Process
}

// Start runs kwok on a free port of NodeIP and waits for its /healthz.
// The CRDs must be installed first (kwok watches them at start).
func Start(ctx context.Context, o Options) (*Kwok, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	for attempt := 1; ; attempt++ {
		ports, err := proc.FreePorts(NodeIP, 1)
		if err != nil {
			return nil, err
		}
		port := ports[0]
		addr := net.JoinHostPort(NodeIP, strconv.Itoa(port))
		p, err := proc.Start(proc.Spec{
			Name: "kwok",
			Path: filepath.Join(o.BinDir, "kwok"),
			Args: []string{
				"--kubeconfig=" + o.Kubeconfig,
				"--manage-all-nodes=false",
				"--manage-nodes-with-annotation-selector=" + NodeAnnotation + "=" + NodeAnnotationValue,
				"--enable-crds=" + strings.Join(EnabledCRDs, ","),
				"--node-ip=" + NodeIP,
				"--node-port=" + strconv.Itoa(port),
				"--server-address=" + addr,
				"--tls-cert-file=" + o.CertFile,
				"--tls-private-key-file=" + o.KeyFile,
				"--node-lease-duration-seconds=" + strconv.Itoa(leaseSeconds),
				// Pod IPs kwok hands out to ordinary pods; engine pods get
				// theirs from the runner.
				"--cidr=10.96.0.0/16",
			},
			Env:     []string{"HOME=" + o.Dir},
			LogPath: filepath.Join(o.Dir, "logs", "kwok.log"),
			PidPath: filepath.Join(o.Dir, "pids", "kwok"+proc.PidFileSuffix),
		})
		if err != nil {
			return nil, err
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a liveness check of our own child
		err = proc.Wait(ctx, 100*time.Millisecond, []*proc.Process{p}, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/healthz", nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("kwok /healthz: %s", resp.Status)
			}
			return nil
		})
		if err == nil {
			return &Kwok{Port: port, proc: p}, nil
		}
		retry := p.Exited() && proc.AddrInUse(p) && attempt < 3
		_ = p.Stop(stopGrace)
		if !retry {
			return nil, fmt.Errorf("starting kwok: %w", err)
		}
	}
}

// Stop stops the kwok controller.
func (k *Kwok) Stop() error {
	if k == nil || k.proc == nil {
		return nil
	}
	return k.proc.Stop(stopGrace)
}

// Install creates (or updates) the CRDs, waits until they are
// established, then creates (or updates) the Stages.
func Install(ctx context.Context, dyn dynamic.Interface, m *Manifests) error {
	for _, crd := range m.CRDs {
		if err := apply(ctx, dyn.Resource(CRDGVR), crd); err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range m.CRDs {
		if err := waitEstablished(ctx, dyn, crd.GetName()); err != nil {
			return err
		}
	}
	for _, st := range m.Stages {
		if err := apply(ctx, dyn.Resource(StageGVR), st); err != nil {
			return fmt.Errorf("installing Stage %s: %w", st.GetName(), err)
		}
	}
	return nil
}

func apply(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj = obj.DeepCopy()
	obj.SetResourceVersion(cur.GetResourceVersion())
	_, err = ri.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	for {
		crd, err := dyn.Resource(CRDGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established: %w", name, errors.Join(ctx.Err(), err))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// NodeName is the name of fake node i (1-based).
func NodeName(i int) string { return "node-" + strconv.Itoa(i) }

// CreateNodes creates n fake nodes (node-1 … node-n) that kwok manages.
func CreateNodes(ctx context.Context, kc kubernetes.Interface, n int) error {
	for i := 1; i <= n; i++ {
		name := NodeName(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{NodeAnnotation: NodeAnnotationValue},
				Labels: map[string]string{
					"kubernetes.io/hostname":      name,
					"kubernetes.io/os":            "linux",
					"kubernetes.io/arch":          "amd64",
					"type":                        "kwok",
					"topology.kubernetes.io/zone": "zone-" + strconv.Itoa(i),
				},
			},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("32"),
					corev1.ResourceMemory: resource.MustParse("256Gi"),
					corev1.ResourcePods:   resource.MustParse("110"),
				},
				Capacity: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("32"),
					corev1.ResourceMemory: resource.MustParse("256Gi"),
					corev1.ResourcePods:   resource.MustParse("110"),
				},
			},
		}
		if _, err := kc.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return nil
}

// WaitNodesReady waits until n fake nodes report Ready.
func WaitNodesReady(ctx context.Context, kc kubernetes.Interface, n int) error {
	for {
		nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for _, node := range nodes.Items {
				for _, c := range node.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready >= n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d Ready nodes (have %d): %w", n, ready, errors.Join(ctx.Err(), err))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
