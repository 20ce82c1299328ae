//go:build !hactl_s3only

package artifact

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
)

// azureParams are the query parameters of an azblob:// URL (those of
// gocloud.dev's azureblob URL opener).
var azureParams = map[string]bool{"domain": true, "protocol": true, "cdn": true, "localemu": true, "storage_account": true}

// openAzure opens an azblob:// container. Without credentials, gocloud.dev's
// default opener applies (the AZURE_STORAGE_* environment variables, then
// Azure's default credential chain). With credentials, the service URL is
// built as that opener builds it (https://ACCOUNT.blob.core.windows.net;
// with localemu=true&protocol=http&domain=127.0.0.1:PORT an emulator's
// http://127.0.0.1:PORT/ACCOUNT) and the client authenticates with the
// shared key, the SAS token or the connection string (whose endpoint is
// its own: it takes no domain, protocol, cdn or localemu).
func openAzure(ctx context.Context, u *url.URL, c *Credentials) (*blob.Bucket, error) {
	q := u.Query()
	for k, v := range q {
		if !azureParams[k] {
			return nil, fmt.Errorf("unknown query parameter %q for an azblob:// store (want domain, protocol, cdn, localemu or storage_account)", k)
		}
		if len(v) > 1 {
			return nil, fmt.Errorf("query parameter %q is given %d times", k, len(v))
		}
	}
	if c == nil {
		return blob.OpenBucket(ctx, u.String())
	}
	clientOpts := &container.ClientOptions{}
	clientOpts.Telemetry = policy.TelemetryOptions{ApplicationID: "hactl"}
	if c.AzureKey == "" && c.AzureSASToken == "" {
		// A connection string names its own endpoint.
		for _, k := range []string{"domain", "protocol", "cdn", "localemu"} {
			if q.Has(k) {
				return nil, fmt.Errorf("%s cannot be combined with %s (the connection string names the endpoint, e.g. BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1)", k, SecretKeyAzureConnectionString)
			}
		}
		client, err := container.NewClientFromConnectionString(c.AzureConnectionString, u.Host, clientOpts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", SecretKeyAzureConnectionString, err)
		}
		return azureblob.OpenBucket(ctx, client, nil)
	}
	if a := q.Get("storage_account"); a != "" && a != c.AzureAccount {
		return nil, fmt.Errorf("storage_account=%s is not the account of the credentials (%s)", a, SecretKeyAzureAccount)
	}
	so := &azureblob.ServiceURLOptions{
		AccountName:   c.AzureAccount,
		StorageDomain: q.Get("domain"),
		Protocol:      q.Get("protocol"),
	}
	for _, p := range []struct {
		key string
		to  *bool
	}{{"cdn", &so.IsCDN}, {"localemu", &so.IsLocalEmulator}} {
		if v := q.Get(p.key); v != "" {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("invalid value %q for %s", v, p.key)
			}
			*p.to = on
		}
	}
	svc, err := azureblob.NewServiceURL(so)
	if err != nil {
		return nil, err
	}
	containerURL, err := url.JoinPath(string(svc), u.Host)
	if err != nil {
		return nil, err
	}
	var client *container.Client
	if c.AzureKey != "" {
		cred, err := container.NewSharedKeyCredential(c.AzureAccount, c.AzureKey)
		if err != nil {
			// The SDK's message says the key is not base64; it never holds it.
			return nil, fmt.Errorf("%s: %w", SecretKeyAzureKey, err)
		}
		client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, clientOpts)
		if err != nil {
			return nil, err
		}
	} else {
		sas := strings.TrimPrefix(c.AzureSASToken, "?")
		if _, err := url.ParseQuery(sas); err != nil {
			return nil, errors.New(SecretKeyAzureSASToken + " is not a SAS token (a URL query such as sv=…&sig=…)")
		}
		client, err = container.NewClientWithNoCredential(containerURL+"?"+sas, clientOpts)
		if err != nil {
			return nil, err
		}
	}
	return azureblob.OpenBucket(ctx, client, nil)
}
