// Package emulators runs the object-store emulators that hactl's gs://
// and azblob:// tests run against, on this host's loopback, reachable by
// other processes (the sandbox's restore pods):
//
//   - Azurite (Microsoft's Azure Storage emulator, a Node.js program that
//     hack/testbins.sh installs from npm) as a child process, with a
//     random shared key for its account, so that a request without the
//     key (or with another) is refused;
//   - fake-gcs-server (a Go module) in this process, behind a gate that
//     refuses every request without an OAuth2 access token from its own
//     token endpoint, which hands tokens only for a JWT assertion signed
//     with the private key of the service-account JSON key it made. So a
//     request without that key's credentials fails, as against Google.
//
// It is imported by tests only.
package emulators

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest"
)

// AzuriteCommand is the executable hack/testbins.sh links into the test
// binaries' directory.
const AzuriteCommand = "azurite-blob"

// AzuriteAccount is Azurite's development account; the tests give it a
// random key of their own (AZURITE_ACCOUNTS) instead of the well-known one.
const AzuriteAccount = "devstoreaccount1"

// Azurite is a running azurite-blob.
type Azurite struct {
	// Endpoint is http://127.0.0.1:PORT; the account's service URL is
	// Endpoint/Account.
	Endpoint string
	// Host is 127.0.0.1:PORT.
	Host string
	// Account and Key are the shared-key credentials (Key is random).
	Account, Key string
	// Dir holds its data (Dir/data) and log (Dir/azurite.log).
	Dir string

	proc *storetest.Process
}

// StartAzurite runs binDir/azurite-blob on a free loopback port with its
// data under dir, and waits until it answers.
func StartAzurite(ctx context.Context, binDir, dir string) (*Azurite, error) {
	bin := filepath.Join(binDir, AzuriteCommand)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no %s in %s: run hack/testbins.sh (it installs Azurite from npm): %w", AzuriteCommand, binDir, err)
	}
	for attempt := 1; ; attempt++ {
		a, err := startAzurite(ctx, bin, dir)
		if err == nil || attempt == 3 || ctx.Err() != nil {
			return a, err
		}
	}
}

func startAzurite(ctx context.Context, bin, dir string) (*Azurite, error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	key := make([]byte, 64)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	host := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	a := &Azurite{Endpoint: "http://" + host, Host: host, Account: AzuriteAccount,
		Key: base64.StdEncoding.EncodeToString(key), Dir: dir}
	cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port), "--location", data,
		"--silent", "--skipApiVersionCheck", "--loose", "--disableTelemetry")
	// The key goes through the environment, never the command line.
	cmd.Env = []string{"AZURITE_ACCOUNTS=" + a.Account + ":" + a.Key, "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	if a.proc, err = storetest.StartProcess(AzuriteCommand, filepath.Join(dir, "azurite.log"), cmd); err != nil {
		return nil, err
	}
	err = a.proc.AwaitServing(ctx, time.Minute, func(ctx context.Context) error {
		// Any HTTP answer (an unauthenticated request gets 403) means it serves.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.Endpoint+"/"+a.Account+"?comp=list", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Stop terminates Azurite and waits for it.
func (a *Azurite) Stop() error {
	if a == nil {
		return nil
	}
	return a.proc.Stop()
}

// ServiceURL is the account's blob service URL.
func (a *Azurite) ServiceURL() string { return a.Endpoint + "/" + a.Account }

// CreateContainer creates a container (a random name when name is empty)
// with the shared key and returns its name.
func (a *Azurite) CreateContainer(ctx context.Context, name string) (string, error) {
	if name == "" {
		name = "hactl-" + randHex(6)
	}
	cred, err := container.NewSharedKeyCredential(a.Account, a.Key)
	if err != nil {
		return "", err
	}
	c, err := container.NewClientWithSharedKeyCredential(a.ServiceURL()+"/"+name, cred, nil)
	if err != nil {
		return "", err
	}
	if _, err := c.Create(ctx, nil); err != nil {
		return "", fmt.Errorf("creating container %s: %w", name, err)
	}
	return name, nil
}

// URL is the store URL of container/prefix on this emulator (gocloud's
// local-emulator parameters). It carries no credentials.
func (a *Azurite) URL(containerName, prefix string) string {
	p := strings.Trim(prefix, "/")
	if p != "" {
		p = "/" + p
	}
	return "azblob://" + containerName + p + "?localemu=true&protocol=http&domain=" + a.Host
}

// ConnectionString is a connection string with the shared key.
func (a *Azurite) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + a.Account + ";AccountKey=" + a.Key + ";BlobEndpoint=" + a.ServiceURL() + ";"
}

// SASToken is a container SAS token (read, add, create, write, delete,
// list; valid for an hour) signed with the shared key.
func (a *Azurite) SASToken(containerName string) (string, error) {
	cred, err := container.NewSharedKeyCredential(a.Account, a.Key)
	if err != nil {
		return "", err
	}
	q, err := sas.BlobSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		StartTime:     time.Now().Add(-5 * time.Minute).UTC(),
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   to.Ptr(sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}).String(),
		ContainerName: containerName,
	}.SignWithSharedKey(cred)
	if err != nil {
		return "", err
	}
	return q.Encode(), nil
}

// Credentials are the shared-key credentials as artifact.Credentials.
func (a *Azurite) Credentials() *artifact.Credentials {
	return &artifact.Credentials{AzureAccount: a.Account, AzureKey: a.Key}
}

// SecretData is the data of a store Secret holding the shared key.
func (a *Azurite) SecretData() map[string]string {
	return map[string]string{artifact.SecretKeyAzureAccount: a.Account, artifact.SecretKeyAzureKey: a.Key}
}

// Secrets are the values that must never appear in any output.
func (a *Azurite) Secrets() []string { return []string{a.Key} }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
