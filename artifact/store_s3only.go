//go:build hactl_s3only

package artifact

import (
	"context"
	"fmt"
	"net/url"

	"gocloud.dev/blob"
)

// The agent image's capture binary (hactl-capture) is built with the tag
// hactl_s3only: it carries the s3:// and file:// drivers only, which keeps
// the capture pod's process small; hactl's capture pods for gs:// and
// azblob:// stores run kubectl-hactl, which has every driver.

func openGCS(context.Context, *url.URL, *Credentials) (*blob.Bucket, error) {
	return nil, errDriverNotBuilt("gs")
}

func openAzure(context.Context, *url.URL, *Credentials) (*blob.Bucket, error) {
	return nil, errDriverNotBuilt("azblob")
}

func errDriverNotBuilt(scheme string) error {
	return fmt.Errorf("this binary is built with the s3:// and file:// drivers only, not %s:// (kubectl-hactl agent capture has every driver)", scheme)
}
