package actions

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/model"
)

// ErrNoStore: the cluster has no seed store (no --store and no
// annotation on its StatefulSet).
var ErrNoStore = errors.New("no seed store")

// StoreRef names a cluster's seed store as the user gave it; either field
// empty means the StatefulSet's annotation (artifact.AnnotationStore,
// artifact.AnnotationStoreSecret).
type StoreRef struct {
	// URL of the store (s3://, gs://, azblob://, file://).
	URL string
	// Secret in the cluster's namespace holding the store credentials;
	// without it and without the annotation, the environment's are used.
	Secret string
}

// StoreOpen says how OpenClusterStore may find the cluster.
type StoreOpen struct {
	// NeedStatefulSet refuses a cluster whose StatefulSet does not exist
	// (without it, a missing StatefulSet is allowed when Ref.URL is set).
	NeedStatefulSet bool
	// Write creates a missing file:// directory (a seed publishing).
	Write bool
}

// ClusterStore is a cluster's seed store, resolved and opened. Close
// Store when done.
type ClusterStore struct {
	Store *artifact.Store
	// StatefulSet is nil when it does not exist (allowed only with a
	// Ref.URL and without NeedStatefulSet).
	StatefulSet *appsv1.StatefulSet
	// Secret names the Secret the credentials came from, "" for the
	// environment.
	Secret string
	// URL is the store URL as resolved (it never holds a credential).
	URL string
}

// OpenClusterStore resolves and opens the seed store of cluster ns/name:
// ref.URL, else the StatefulSet's annotation. The credentials come from
// ref.Secret, else the annotation, else the environment. Errors say what
// is missing and which flag or annotation sets it, never a credential.
func OpenClusterStore(ctx context.Context, c kubernetes.Interface, ns, name string, ref StoreRef, o StoreOpen) (*ClusterStore, error) {
	cs := &ClusterStore{}
	sts, err := c.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		cs.StatefulSet = sts
	case apierrors.IsNotFound(err) && (!o.NeedStatefulSet && ref.URL != ""):
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("no StatefulSet %q in namespace %q", name, ns)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("you may not get statefulset %q in namespace %q (hactl reads its %s annotation): %v", name, ns, artifact.AnnotationStore, err)
	default:
		return nil, fmt.Errorf("reading statefulset %s/%s: %w", ns, name, err)
	}
	url, secret := ref.URL, ref.Secret
	if cs.StatefulSet != nil {
		if url == "" {
			url = cs.StatefulSet.Annotations[artifact.AnnotationStore]
		}
		if secret == "" {
			secret = cs.StatefulSet.Annotations[artifact.AnnotationStoreSecret]
		}
	}
	if url == "" {
		return nil, fmt.Errorf("%w for cluster %s/%s: give --store URL or annotate the StatefulSet with %s=URL", ErrNoStore, ns, name, artifact.AnnotationStore)
	}
	var creds *artifact.Credentials
	if secret != "" {
		creds, err = ReadStoreSecret(ctx, c, ns, secret, artifact.StoreScheme(url))
		if err != nil {
			return nil, err
		}
		cs.Secret = secret
	}
	cs.URL = url
	cs.Store, err = artifact.OpenStore(ctx, url, artifact.Options{Credentials: creds, CreateDir: o.Write})
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// ReadStoreSecret reads the credentials of a store of scheme (s3, gs,
// azblob; "" infers it from the keys) from a Secret
// (artifact.CredentialsFromSecret); errors name the Secret and the missing
// or wrong keys, never a value.
func ReadStoreSecret(ctx context.Context, c kubernetes.Interface, ns, name, scheme string) (*artifact.Credentials, error) {
	s, err := c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("you may not get secret %q in namespace %q (the seed store's credentials); grant get on that Secret", name, ns)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the seed store's credentials Secret %q does not exist in namespace %q", name, ns)
	case err != nil:
		return nil, fmt.Errorf("reading the seed store's credentials Secret %q: %w", name, err)
	}
	return artifact.CredentialsFromSecret(name, scheme, s.Data)
}

// InUseGenerations lists the generations named by in-progress actions of
// the cluster's ledger, each with what uses it.
func InUseGenerations(ctx context.Context, c kubernetes.Interface, ns, name string) (map[string]string, error) {
	led, err := ReadLedger(ctx, c, ns, name)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range led.Entries {
		if e.State == model.EntryInProgress && e.Generation != "" {
			out[e.Generation] = fmt.Sprintf("%s %s (ledger entry %s, phase %s)", e.Action, e.Member, e.ID, e.Phase)
		}
	}
	return out, nil
}
