package actions

import (
	"context"
	"errors"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/etcdgen"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// etcdSeeder captures etcd seed generations: a snapshot
// (Maintenance.Snapshot) streamed through a port-forward into the store
// while it is hashed (artifact/etcdgen).
type etcdSeeder struct{}

// Published implements Seeder.
func (etcdSeeder) Published(ctx context.Context, s *artifact.Store, g, clusterID string) (*artifact.Manifest, error) {
	return etcdgen.Existing(ctx, s, g, clusterID)
}

// Seed implements Seeder.
func (etcdSeeder) Seed(ctx context.Context, c SeedCapture) (SeedOutcome, error) {
	res, err := etcdgen.Seed(ctx, etcdgen.SeedRequest{
		Store:           c.Store,
		Generation:      c.Generation,
		Source:          target(c.Cluster, c.Member),
		Probe:           engine.ProbeOptions{Dial: c.Dial, Timeout: c.ProbeTimeout, Credentials: c.Credentials},
		ExpectClusterID: c.ClusterID,
		ExpectMemberID:  c.MemberID,
		Info:            c.Info,
		CreatedBy:       c.CreatedBy,
		Progress:        c.Progress,
		BeforePublish:   c.BeforePublish,
		OnPhase: func(p model.ActionPhase, _ string) {
			if p == model.ActionPhaseUploading && c.OnCaptured != nil {
				c.OnCaptured()
			}
		},
	})
	if errors.Is(err, etcdgen.ErrSourceChanged) {
		return SeedOutcome{}, &FenceConflictError{Detail: err.Error()}
	}
	return SeedOutcome{Manifest: res.Manifest, Already: res.Already, Took: res.Took, Via: "a port-forward"}, err
}
