package actions

import (
	"context"
	"errors"
	"fmt"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/etcdgen"
	"github.com/hactl-dev/hactl/engine"
	"github.com/hactl-dev/hactl/model"
)

// etcdSeeder captures etcd seed generations: a snapshot
// (Maintenance.Snapshot) streamed into the store while it is hashed
// (artifact/etcdgen), in a capture pod next to the member
// (CaptureArgs) or through a port-forward (Seed).
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

// CaptureArgs implements PodCapturer: `hactl-capture` (agent capture) of
// the chosen member at spec.Endpoint, refusing any other member or
// cluster, with JSON lines on stdout for the lock holder.
func (etcdSeeder) CaptureArgs(spec CapturePodSpec) []string {
	c := spec.Capture
	args := []string{
		"--store=" + spec.StoreURL,
		"--generation=" + c.Generation,
		"--endpoint=" + spec.Endpoint,
		"--member=" + c.Member,
		"--source-namespace=" + c.Info.Namespace,
		"--source-cluster=" + c.Info.Cluster,
		"--created-by=" + c.CreatedBy + " (capture pod)",
		"--timeout=" + spec.Timeout.String(),
		"-o", "json",
	}
	if c.Info.UID != "" {
		args = append(args, "--source-uid="+c.Info.UID)
	}
	if c.MemberID != "" {
		args = append(args, "--expect-member-id="+c.MemberID)
	}
	if c.ClusterID != "" {
		args = append(args, "--expect-cluster-id="+c.ClusterID)
	}
	if spec.Total > 0 {
		args = append(args, fmt.Sprintf("--total=%d", spec.Total))
	}
	if spec.TLS {
		args = append(args, "--tls-dir="+captureTLSDir)
		if spec.ServerName != "" {
			args = append(args, "--server-name="+spec.ServerName)
		}
	}
	return args
}
