package tui

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/hactl-dev/hactl/actions"
	"github.com/hactl-dev/hactl/tui/internal/common"
)

// Generation is one seed generation of a cluster, as the seed-phase view
// lists it.
type Generation = common.Generation

// Generations lists a cluster's seed generations. Every method may block.
type Generations = common.Generations

// StoreGenerations lists a cluster's seed generations for the seed-phase
// view from the store `kubectl hactl generations list` reads: the
// StatefulSet's annotations, credentials by Secret reference
// (actions.OpenClusterStore).
func StoreGenerations(c kubernetes.Interface) Generations { return storeGenerations{client: c} }

type storeGenerations struct{ client kubernetes.Interface }

// List implements Generations.
func (g storeGenerations) List(ctx context.Context, namespace, cluster string) ([]Generation, error) {
	cs, err := actions.OpenClusterStore(ctx, g.client, namespace, cluster, actions.StoreRef{}, actions.StoreOpen{NeedStatefulSet: true})
	if err != nil {
		return nil, err
	}
	defer cs.Store.Close()
	es, err := cs.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Generation, 0, len(es))
	for _, e := range es {
		gen := Generation{ID: e.Generation, Complete: e.Published()}
		if m := e.Manifest; m != nil {
			gen.Created, gen.SourceMember = m.CreatedAt, m.Source.Member
			gen.Revision, gen.Term = m.Identity.Revision, m.Identity.RaftTerm
			gen.Bytes, gen.Files = m.TotalSize, len(m.Files)
		}
		out = append(out, gen)
	}
	return out, nil
}
