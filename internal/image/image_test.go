package image_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/hactl-dev/hactl/internal/image"
)

// created is the timestamp the tests build with: not the epoch, so a
// build that ignored Options.Created would show.
var created = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

var (
	binOnce  sync.Once
	binDir   string
	binPaths = map[string]string{}
	binErr   error
)

// TestMain removes the binaries the tests build (shared across tests:
// building one costs a link).
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// tinyAgent builds a tiny static linux binary for each GOARCH in arches,
// once per run; tinyCapture is another one (it prints another line), the
// image's capture binary.
func tinyAgent(t *testing.T, arch string) string { return tiny(t, "kubectl-hactl", arch) }

func tinyCapture(t *testing.T, arch string) string { return tiny(t, "hactl-capture", arch) }

func tiny(t *testing.T, name, arch string) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "hactl-image-test-")
		if binErr != nil {
			return
		}
		for _, n := range []string{"kubectl-hactl", "hactl-capture"} {
			src := filepath.Join(binDir, n, "main.go")
			if binErr = os.MkdirAll(filepath.Dir(src), 0o755); binErr != nil {
				return
			}
			binErr = os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\""+n+" (image test)\") }\n"), 0o644)
			if binErr != nil {
				return
			}
			for _, a := range []string{"amd64", "arm64"} {
				out := filepath.Join(binDir, n+"-"+a)
				cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "main.go")
				cmd.Dir = filepath.Dir(src)
				cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+a, "GOWORK=off", "GOFLAGS=-buildvcs=false")
				if msg, err := cmd.CombinedOutput(); err != nil {
					binErr = errors.New("go build: " + err.Error() + "\n" + string(msg))
					return
				}
				binPaths[n+"-"+a] = out
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPaths[name+"-"+arch]
}

// agent is the binaries the image tests put in the image: the real ones
// when HACTL_AGENT_BINARY names kubectl-hactl (hactl-capture beside it;
// the platform read from its ELF header), else tiny static ones built
// here.
func agent(t *testing.T) (path, capture, platform string) {
	t.Helper()
	if p := os.Getenv("HACTL_AGENT_BINARY"); p != "" {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatalf("HACTL_AGENT_BINARY=%s: %v", p, err)
		}
		defer f.Close()
		c := filepath.Join(filepath.Dir(p), "hactl-capture")
		switch f.Machine {
		case elf.EM_X86_64:
			return p, c, "linux/amd64"
		case elf.EM_AARCH64:
			return p, c, "linux/arm64"
		default:
			t.Fatalf("HACTL_AGENT_BINARY=%s is for %s", p, f.Machine)
		}
	}
	return tinyAgent(t, "amd64"), tinyCapture(t, "amd64"), "linux/amd64"
}

// madeBinary is bin/kubectl-hactl and bin/hactl-capture as `make build`
// wrote them, when both are there and are static linux/amd64 binaries;
// "" otherwise.
func madeBinary() (agent, capture string) {
	var paths [2]string
	for i, n := range []string{"kubectl-hactl", "hactl-capture"} {
		p, err := filepath.Abs(filepath.Join("..", "..", "bin", n))
		if err != nil {
			return "", ""
		}
		f, err := elf.Open(p)
		if err != nil {
			return "", ""
		}
		static := f.Machine == elf.EM_X86_64 && f.Section(".interp") == nil
		f.Close()
		if !static {
			return "", ""
		}
		paths[i] = p
	}
	return paths[0], paths[1]
}

// caBundle writes a PEM bundle of two freshly made self-signed CAs, so the
// tests do not depend on the machine's bundle.
func caBundle(t *testing.T) string {
	t.Helper()
	var bundle bytes.Buffer
	for i := range 2 {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(int64(i + 1)),
			Subject:               pkix.Name{CommonName: "hactl image test CA"},
			NotBefore:             created,
			NotAfter:              created.Add(24 * time.Hour),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := pem.Encode(&bundle, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "ca-certificates.crt")
	if err := os.WriteFile(p, bundle.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func options(t *testing.T) image.Options {
	t.Helper()
	bin, capture, platform := agent(t)
	return image.Options{
		Binary:        bin,
		CaptureBinary: capture,
		Version:       "v1.2.3-test",
		Commit:        "0123abc",
		Platform:      platform,
		CACerts:       caBundle(t),
		Created:       created,
	}
}

func build(t *testing.T, o image.Options) (v1.Image, v1.Hash) {
	t.Helper()
	img, err := image.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return img, d
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestRoundTripThroughARealRegistry pushes the built image to a real
// registry (go-containerregistry's registry server over HTTP) the way a
// release does, pulls it back by tag and by digest, and checks what a
// restore pod would get: the digest, the config, and the agent binary
// byte for byte.
func TestRoundTripThroughARealRegistry(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // anonymous: no credentials of this machine
	o := options(t)
	if p, c := madeBinary(); p != "" && os.Getenv("HACTL_AGENT_BINARY") == "" {
		// make test builds first: the image holds what make build made.
		o.Binary, o.CaptureBinary, o.Platform = p, c, "linux/amd64"
	}
	img, want := build(t, o)

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/hactl-dev/hactl"
	tag := repo + ":" + o.Version
	ctx := context.Background()

	pushed, err := image.Push(ctx, tag, img)
	if err != nil {
		t.Fatal(err)
	}
	if pushed.DigestStr() != want.String() || pushed.Context().Name() != repo {
		t.Fatalf("push reported %s, want %s@%s", pushed, repo, want)
	}
	tags, err := remote.List(pushed.Context(), remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tags, []string{o.Version}) {
		t.Fatalf("registry tags %v, want [%s]", tags, o.Version)
	}

	byTag, err := name.ParseReference(tag)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []name.Reference{byTag, pushed} {
		t.Run(ref.Identifier(), func(t *testing.T) {
			got, err := remote.Image(ref, remote.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			d, err := got.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if d != want {
				t.Fatalf("pulled %s, pushed %s", d, want)
			}
			// Every blob is read back from the registry and checked
			// against the manifest and the config's diff_ids.
			if err := validate.Image(got); err != nil {
				t.Fatalf("pulled image does not validate: %v", err)
			}
			checkConfig(t, got, o)
			checkFiles(t, got, o)
		})
	}
}

func checkConfig(t *testing.T, img v1.Image, o image.Options) {
	t.Helper()
	mt, err := img.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	if mt != "application/vnd.docker.distribution.manifest.v2+json" {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if p := cf.Platform().String(); p != o.Platform {
		t.Errorf("platform %s, want %s", p, o.Platform)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("created %s, want %s", cf.Created.Time, created)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/kubectl-hactl"}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" || c.WorkingDir != "/" {
		t.Errorf("user %q workdir %q", c.User, c.WorkingDir)
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("env %q has no SSL_CERT_FILE", c.Env)
	}
	if !slices.ContainsFunc(c.Env, func(e string) bool {
		return strings.HasPrefix(e, "PATH=") && slices.Contains(strings.Split(strings.TrimPrefix(e, "PATH="), ":"), "/usr/local/bin")
	}) {
		t.Errorf("env %q: kubectl-hactl is not on PATH (the pod command names it bare)", c.Env)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Commit,
		"org.opencontainers.image.source":   "https://github.com/hactl-dev/hactl",
		"org.opencontainers.image.title":    "hactl",
	}
	for k, v := range wantLabels {
		if c.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, c.Labels[k], v)
		}
	}
	if len(cf.History) != 2 || len(cf.RootFS.DiffIDs) != 2 {
		t.Errorf("history %d entries, diff_ids %d: want 2 layers", len(cf.History), len(cf.RootFS.DiffIDs))
	}
}

// entry is one file of the image's flattened filesystem.
type entry struct {
	hdr  tar.Header
	body []byte
}

func flatten(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	fs := map[string]entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fs
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		fs[strings.TrimSuffix(h.Name, "/")] = entry{*h, b}
	}
}

func checkFiles(t *testing.T, img v1.Image, o image.Options) {
	t.Helper()
	fs := flatten(t, img)
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{
		"etc", "etc/group", "etc/passwd", "etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt",
		"home", "home/nonroot", "root", "tmp", "usr", "usr/local", "usr/local/bin", "usr/local/bin/hactl-capture", "usr/local/bin/kubectl-hactl",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("image files %q, want %q", names, want)
	}
	for n, e := range fs {
		if !e.hdr.ModTime.Equal(created) {
			t.Errorf("%s: mtime %s, want %s", n, e.hdr.ModTime, created)
		}
	}

	for n, src := range map[string]string{"usr/local/bin/kubectl-hactl": o.Binary, "usr/local/bin/hactl-capture": o.CaptureBinary} {
		bin := fs[n]
		if sha256.Sum256(bin.body) != sum(t, src) {
			t.Errorf("/%s in the image differs from %s (%d bytes in the image)", n, src, len(bin.body))
		}
		if bin.hdr.Typeflag != tar.TypeReg || bin.hdr.Mode&0o7777 != 0o755 || bin.hdr.Uid != 0 || bin.hdr.Gid != 0 {
			t.Errorf("/%s: type %c mode %o owner %d:%d, want a root-owned 0755 file", n, bin.hdr.Typeflag, bin.hdr.Mode, bin.hdr.Uid, bin.hdr.Gid)
		}
	}
	ca := fs["etc/ssl/certs/ca-certificates.crt"]
	if len(ca.body) == 0 || sha256.Sum256(ca.body) != sum(t, o.CACerts) {
		t.Errorf("ca-certificates.crt: %d bytes, not the bundle given", len(ca.body))
	}
	if !x509.NewCertPool().AppendCertsFromPEM(ca.body) {
		t.Error("ca-certificates.crt holds no certificate")
	}
	if p := string(fs["etc/passwd"].body); !strings.Contains(p, "\nnonroot:x:65532:65532:nonroot:/home/nonroot:") {
		t.Errorf("/etc/passwd has no nonroot 65532:\n%s", p)
	}
	if g := string(fs["etc/group"].body); !strings.Contains(g, "\nnonroot:x:65532:") {
		t.Errorf("/etc/group has no nonroot 65532:\n%s", g)
	}
	if h := fs["tmp"].hdr; h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp: type %c mode %o, want a 1777 directory", h.Typeflag, h.Mode)
	}
	if h := fs["home/nonroot"].hdr; h.Typeflag != tar.TypeDir || h.Uid != 65532 || h.Gid != 65532 {
		t.Errorf("/home/nonroot: type %c owner %d:%d, want a directory of 65532", h.Typeflag, h.Uid, h.Gid)
	}
}

// TestSameInputsSameDigest: the build is reproducible, and the digest
// still follows every input that should change it.
func TestSameInputsSameDigest(t *testing.T) {
	o := options(t)
	_, first := build(t, o)
	_, again := build(t, o)
	if first != again {
		t.Fatalf("two builds of the same inputs: %s then %s", first, again)
	}

	changed := map[string]func(*image.Options){
		"version": func(o *image.Options) { o.Version = "v1.2.4" },
		"commit":  func(o *image.Options) { o.Commit = "fedcba9" },
		"created": func(o *image.Options) { o.Created = created.Add(time.Second) },
		"ca":      func(o *image.Options) { o.CACerts = caBundle(t) },
		"capture": func(o *image.Options) { o.CaptureBinary = tinyAgent(t, "amd64") },
	}
	for what, change := range changed {
		c := o
		change(&c)
		if _, d := build(t, c); d == first {
			t.Errorf("changing the %s kept the digest %s", what, d)
		}
	}
}

// TestLayoutLoadsBack writes the OCI layout, reads it back as an index and
// finds the same image under its tag and platform; writing again replaces
// the layout, and a directory that is not one is left alone.
func TestLayoutLoadsBack(t *testing.T) {
	o := options(t)
	img, want := build(t, o)
	tag, err := name.NewTag("ghcr.io/hactl-dev/hactl:" + o.Version)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "image")
	for range 2 { // the second write replaces the first
		if err := image.WriteLayout(dir, img, tag); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("layout index does not validate: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("layout holds %d manifests, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	if desc.Digest != want {
		t.Fatalf("layout names %s, built %s", desc.Digest, want)
	}
	if desc.Annotations["org.opencontainers.image.ref.name"] != o.Version || desc.Annotations["io.containerd.image.name"] != tag.Name() {
		t.Errorf("layout annotations %v", desc.Annotations)
	}
	if desc.Platform == nil || desc.Platform.String() != o.Platform {
		t.Errorf("layout platform %v, want %s", desc.Platform, o.Platform)
	}
	got, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := got.Digest(); err != nil || d != want {
		t.Fatalf("layout image digest %s (%v), want %s", d, err, want)
	}
	if err := validate.Image(got); err != nil {
		t.Fatalf("layout image does not validate: %v", err)
	}
	checkConfig(t, got, o)
	checkFiles(t, got, o)

	other := t.TempDir()
	keep := filepath.Join(other, "keep")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := image.WriteLayout(other, img, tag); err == nil || !strings.Contains(err.Error(), "not an OCI layout") {
		t.Fatalf("writing over a non-layout directory: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("a refused write touched the directory: %v", err)
	}
}

// TestTarballLoadsBack reads the `docker save` tarball back the way
// `crane push FILE REF` does: the same manifest digest (so a release pushed
// from the tarball has the digest make image printed), config and layers.
func TestTarballLoadsBack(t *testing.T) {
	o := options(t)
	img, want := build(t, o)
	tag, err := name.NewTag("ghcr.io/hactl-dev/hactl:" + o.Version)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hactl-image.tar")
	if err := image.WriteTarball(path, img, tag); err != nil {
		t.Fatal(err)
	}
	got, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got); err != nil {
		t.Fatalf("tarball image does not validate: %v", err)
	}
	if d, err := got.Digest(); err != nil || d != want {
		m, _ := got.RawManifest()
		t.Fatalf("the tarball loads as %s (%v), built %s; its manifest:\n%s", d, err, want, m)
	}
	wantCfg, _ := img.ConfigName()
	gotCfg, err := got.ConfigName()
	if err != nil || gotCfg != wantCfg {
		t.Fatalf("tarball config %s (%v), want %s", gotCfg, err, wantCfg)
	}
	wl, _ := img.Layers()
	gl, err := got.Layers()
	if err != nil || len(gl) != len(wl) {
		t.Fatalf("tarball has %d layers (%v), want %d", len(gl), err, len(wl))
	}
	for i := range wl {
		w, _ := wl[i].Digest()
		g, err := gl[i].Digest()
		if err != nil || g != w {
			t.Errorf("tarball layer %d is %s (%v), want %s", i, g, err, w)
		}
	}
	checkFiles(t, got, o)
}

// TestPlatformArm64: an arm64 binary makes an arm64 image.
func TestPlatformArm64(t *testing.T) {
	o := options(t)
	o.Binary, o.CaptureBinary, o.Platform = tinyAgent(t, "arm64"), tinyCapture(t, "arm64"), "linux/arm64"
	img, _ := build(t, o)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" {
		t.Fatalf("config platform %s/%s, want linux/arm64", cf.OS, cf.Architecture)
	}
	checkFiles(t, img, o)
}

// TestBuildRefuses: what would make an image that cannot run, or an
// unlabelled one, fails the build with a message saying what is wrong.
func TestBuildRefuses(t *testing.T) {
	good := options(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "empty.crt")
	if err := os.WriteFile(notPEM, []byte("no certificates here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(*image.Options)
		want   string
	}{
		{"no binary", func(o *image.Options) { o.Binary = filepath.Join(dir, "absent") }, "no binary at"},
		{"not an executable", func(o *image.Options) { o.Binary = text }, "is not a Linux executable"},
		{"other architecture", func(o *image.Options) {
			o.Binary, o.CaptureBinary, o.Platform = tinyAgent(t, "arm64"), tinyCapture(t, "amd64"), "linux/arm64"
		}, "cross-build it with CGO_ENABLED=0 GOOS=linux GOARCH=arm64"},
		{"no capture binary", func(o *image.Options) { o.CaptureBinary = "" }, "no capture binary given"},
		{"capture binary not an executable", func(o *image.Options) { o.CaptureBinary = text }, "is not a Linux executable"},
		{"not linux", func(o *image.Options) { o.Platform = "windows/amd64" }, "linux only"},
		{"no version", func(o *image.Options) { o.Version = "" }, "no version"},
		{"no CA bundle", func(o *image.Options) { o.CACerts = filepath.Join(dir, "absent.crt") }, "no CA bundle at"},
		{"CA bundle without certificates", func(o *image.Options) { o.CACerts = notPEM }, "holds no PEM certificate"},
	}
	// A dynamically linked binary: the machine's own /bin/true when it
	// is one for amd64.
	if f, err := elf.Open("/bin/true"); err == nil {
		dynamic := f.Machine == elf.EM_X86_64 && slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if dynamic {
			cases = append(cases, struct {
				name   string
				change func(*image.Options)
				want   string
			}{"dynamically linked", func(o *image.Options) { o.Binary, o.Platform = "/bin/true", "linux/amd64" }, "build it with CGO_ENABLED=0"})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := good
			c.change(&o)
			img, err := image.Build(o)
			if err == nil {
				d, _ := img.Digest()
				t.Fatalf("built %s", d)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}
