package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hactl-dev/hactl/artifact"
	"github.com/hactl-dev/hactl/artifact/storetest/emulators"
	"github.com/hactl-dev/hactl/internal/testenv"
)

// The agent (a process of its own, as in a restore pod) takes a gs:// or
// azblob:// store's credentials from the environment, under the store
// Secret's key names (the restore pod's envFrom): without them it cannot
// read the generation and leaves the data directory alone; with them it
// restores; its output shows no credential.
func TestAgentRestoreTakesStoreCredentialsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) (url string, creds *artifact.Credentials, env map[string]string, secrets []string)
	}{
		{"gs", func(t *testing.T) (string, *artifact.Credentials, map[string]string, []string) {
			g, err := emulators.StartGCS()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(g.Stop)
			return g.URL(g.CreateBucket(""), "etcd"), g.Credentials(), g.SecretData(), g.Secrets()
		}},
		{"azblob", func(t *testing.T) (string, *artifact.Credentials, map[string]string, []string) {
			testenv.SkipShort(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			a, err := emulators.StartAzurite(ctx, testenv.BinDir(t), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.Stop() })
			c, err := a.CreateContainer(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			return a.URL(c, "etcd"), a.Credentials(), a.SecretData(), a.Secrets()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, creds, env, secrets := tc.store(t)
			s, err := artifact.OpenStore(context.Background(), url, artifact.Options{Credentials: creds})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			publishFiles(t, s, "g1", 10, map[string]string{"member/data": "restored from " + tc.name})
			args := []string{"--store=" + url, "--generation=g1"}

			volume := func() string {
				v := filepath.Join(t.TempDir(), "volume")
				if err := os.Mkdir(v, 0o700); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(v, "data")
			}
			without := volume()
			// This machine's own credentials, if any, must not stand in.
			clean := []string{"GOOGLE_APPLICATION_CREDENTIALS=", "GOOGLE_APPLICATION_CREDENTIALS_JSON=", "AZURE_STORAGE_ACCOUNT=",
				"AZURE_STORAGE_KEY=", "AZURE_STORAGE_SAS_TOKEN=", "AZURE_STORAGE_CONNECTION_STRING=", "HOME=" + t.TempDir()}
			text, code := runAgent(t, clean, append(args, "--data-dir="+without)...)
			if code != 1 {
				t.Fatalf("agent without credentials: exit %d, want 1\n%s", code, text)
			}
			if _, err := os.Stat(without); !os.IsNotExist(err) {
				t.Fatalf("the agent without credentials created %s (%v)", without, err)
			}

			var kv []string
			for k, v := range env {
				kv = append(kv, k+"="+v)
			}
			dir := volume()
			out, code := runAgent(t, kv, append(args, "--data-dir="+dir)...)
			if code != 0 {
				t.Fatalf("agent with the Secret's keys as env: exit %d\n%s", code, out)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "member", "data")); err != nil || string(b) != "restored from "+tc.name {
				t.Fatalf("restored %q %v", b, err)
			}
			for _, v := range secrets {
				if strings.Contains(text+out, v) {
					t.Fatalf("a credential appears in the agent's output:\n%s\n%s", text, out)
				}
			}
		})
	}
}
