package actions

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/internal/buildinfo"
	"github.com/hactl-dev/hactl/model"
)

// DefaultAgentImage is hactl's own image at this build's version: what
// agent pods run unless told otherwise (any image with kubectl-hactl on
// its PATH will do). It is a tag: the receipts name the digest the pods'
// nodes report, and the restore pods after the first run the first one's
// (see agentimage.go).
func DefaultAgentImage() string { return "ghcr.io/hactl-dev/hactl:" + buildinfo.Version }

// RestoreSource is the generation a restore restores, as the cluster's
// store holds it.
type RestoreSource struct {
	Manifest *artifact.Manifest
	// Facts pin the restore to this manifest (digest, cluster ID,
	// revision): the restore pods refuse any other content.
	Facts *model.GenerationFacts
	// StoreURL is the URL the restore pods read from (it never holds a
	// credential); StoreSecret the Secret their credentials come from, ""
	// for none; Store the store as shown.
	StoreURL, StoreSecret, Store string
}

// ReadRestoreSource reads generation g's manifest from the store of
// cluster ns/name (ref, else the StatefulSet's annotations), which
// verifies its format, digest and identity; the restore pods verify every
// byte again before they touch a data directory.
func ReadRestoreSource(ctx context.Context, c kubernetes.Interface, ns, name, g string, ref StoreRef) (*RestoreSource, error) {
	cs, err := OpenClusterStore(ctx, c, ns, name, ref, StoreOpen{NeedStatefulSet: true})
	if err != nil {
		return nil, err
	}
	defer cs.Store.Close()
	m, err := cs.Store.ReadManifest(ctx, g)
	if err != nil {
		return nil, err
	}
	id := m.Identity
	return &RestoreSource{
		Manifest: m,
		Facts: &model.GenerationFacts{Generation: id.Generation, Engine: id.Engine, ClusterID: id.ClusterID,
			Revision: id.Revision, CapturedAt: m.CreatedAt, Digest: m.Digest},
		StoreURL: cs.URL, StoreSecret: cs.Secret, Store: cs.Store.String(),
	}, nil
}

// Pin sets the intent options a restore of src needs: the generation's
// facts, the store the pods read and their credentials' Secret, and the
// agent image (DefaultAgentImage when none is set).
func (src *RestoreSource) Pin(o *model.ActionOptions) {
	o.Source, o.SeedStore, o.StoreSecret = src.Facts, src.StoreURL, src.StoreSecret
	if o.AgentImage == "" {
		o.AgentImage = DefaultAgentImage()
	}
}
