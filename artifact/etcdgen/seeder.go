package etcdgen

import (
	"context"
	"fmt"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/seeding"
	"github.com/hactl-dev/hactl/model"
)

// Seeder captures etcd seed generations for the executor
// (seeding.Seeder): a snapshot (Maintenance.Snapshot) streamed into the
// store while it is hashed, in a capture pod next to the member
// (CaptureArgs, run by the agent's capture) or through a port-forward
// (Seed).
type Seeder struct{}

var (
	_ seeding.Seeder      = Seeder{}
	_ seeding.PodCapturer = Seeder{}
)

// Published implements seeding.Seeder.
func (Seeder) Published(ctx context.Context, s *artifact.Store, g, clusterID string) (*artifact.Manifest, error) {
	return Existing(ctx, s, g, clusterID)
}

// Seed implements seeding.Seeder.
func (Seeder) Seed(ctx context.Context, c seeding.Capture) (seeding.Outcome, error) {
	res, err := Seed(ctx, SeedRequest{
		Store:           c.Store,
		Generation:      c.Generation,
		Source:          c.Source,
		Probe:           c.Probe,
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
	return seeding.Outcome{Manifest: res.Manifest, Already: res.Already, Took: res.Took, Via: "a port-forward"}, err
}

// CaptureArgs implements seeding.PodCapturer: `hactl-capture` (agent
// capture) of the chosen member at a.Endpoint, refusing any other member
// or cluster, with JSON lines on stdout for the lock holder.
func (Seeder) CaptureArgs(a seeding.PodArgs) []string {
	c := a.Capture
	args := []string{
		"--store=" + a.StoreURL,
		"--generation=" + c.Generation,
		"--endpoint=" + a.Endpoint,
		"--member=" + c.Member,
		"--source-namespace=" + c.Info.Namespace,
		"--source-cluster=" + c.Info.Cluster,
		"--created-by=" + c.CreatedBy + " (capture pod)",
		"--timeout=" + a.Timeout.String(),
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
	if a.Total > 0 {
		args = append(args, fmt.Sprintf("--total=%d", a.Total))
	}
	if a.TLSDir != "" {
		args = append(args, "--tls-dir="+a.TLSDir)
		if a.ServerName != "" {
			args = append(args, "--server-name="+a.ServerName)
		}
	}
	return args
}
