// Package image builds hactl's agent image, the image restore pods run
// (actions.DefaultAgentImage, ghcr.io/hactl-dev/hactl:<version>), without
// a container engine: it assembles the layers and the config with
// go-containerregistry and writes them as an OCI image layout, a
// `docker save` tarball, or straight to a registry.
//
// The image is the static kubectl-hactl and hactl-capture binaries on an
// empty base:
//
//   - a system layer: /etc/ssl/certs/ca-certificates.crt (the build
//     machine's CA bundle), a minimal /etc/passwd and /etc/group naming the
//     nonroot user 65532, /home/nonroot and /tmp (mode 1777);
//   - the binary layer: /usr/local/bin/kubectl-hactl (restore pods run it)
//     and /usr/local/bin/hactl-capture (capture pods run it), root-owned,
//     mode 0755;
//   - a config running /usr/local/bin/kubectl-hactl as 65532:65532 with
//     SSL_CERT_FILE and PATH set and the OCI labels (version, revision,
//     source, title).
//
// The manifest is Docker schema 2 (what a `docker save` tarball rebuilds
// when pushed), so the digest Build reports is the one the OCI layout, the
// tarball and Push all give a registry.
//
// A build is reproducible: every timestamp is Options.Created (the Unix
// epoch when unset; hack/image takes SOURCE_DATE_EPOCH), tar entries are
// sorted and carry only numeric owners, and the gzip stream has an empty
// header, so the same inputs and Go toolchain give the same digest.
//
// This package imports only the standard library and go-containerregistry
// (internal/archtest checks).
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where things are in the image, and what it says about itself.
const (
	// BinaryPath is the agent binary inside the image (also the entrypoint).
	BinaryPath = "/usr/local/bin/kubectl-hactl"
	// CaptureBinaryPath is the capture binary inside the image, the
	// command of capture pods.
	CaptureBinaryPath = "/usr/local/bin/hactl-capture"
	// CACertsPath is the CA bundle inside the image (SSL_CERT_FILE).
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// DefaultCACerts is where the build machine's bundle is read from:
	// Debian's (and Ubuntu's, Alpine's) ca-certificates.
	DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"
	// DefaultRepository is the repository actions.DefaultAgentImage names.
	DefaultRepository = "ghcr.io/hactl-dev/hactl"
	// DefaultPlatform is the platform built when Options.Platform is empty.
	DefaultPlatform = "linux/amd64"
	// Source and Title are the org.opencontainers.image.source and .title
	// labels.
	Source = "https://github.com/hactl-dev/hactl"
	Title  = "hactl"
	// NonRoot is the uid and gid the agent runs as (distroless' nonroot).
	NonRoot = 65532
)

// The OCI label keys the config carries.
const (
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelTitle    = "org.opencontainers.image.title"
)

// Options are the inputs of Build; the same Options (and file contents)
// give the same image digest.
type Options struct {
	// Binary is the path of the static kubectl-hactl binary, built for
	// Platform (CGO_ENABLED=0 GOOS=linux GOARCH=...). Required.
	Binary string
	// CaptureBinary is the path of the static hactl-capture binary
	// (./cmd/hactl-capture), built the same way. Required.
	CaptureBinary string
	// Version is the org.opencontainers.image.version label, e.g. v0.1.0.
	// Required.
	Version string
	// Commit is the org.opencontainers.image.revision label; "unknown"
	// when empty.
	Commit string
	// Platform is os/arch[/variant]; DefaultPlatform when empty. Only
	// linux is accepted.
	Platform string
	// CACerts is the PEM bundle copied to CACertsPath; DefaultCACerts when
	// empty.
	CACerts string
	// Created stamps the config, the history and every file in the
	// layers; the Unix epoch when zero.
	Created time.Time
}

// elfMachines maps the GOARCH values the image may be built for to the ELF
// machine their binaries carry.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// Build assembles the agent image from o. It fails, saying what to do,
// when the binary is missing, not a Linux executable for the platform, or
// dynamically linked (the image has no libc), and when the CA bundle is
// missing or holds no certificate.
func Build(o Options) (v1.Image, error) {
	o, plat, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	created := o.Created
	bins, certs, err := readInputs(o, plat)
	if err != nil {
		return nil, err
	}
	sys, err := layer(created, systemFiles(certs))
	if err != nil {
		return nil, fmt.Errorf("image: system layer: %w", err)
	}
	agent, err := layer(created, []file{
		dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755),
		{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, body: bins[0]},
		{name: strings.TrimPrefix(CaptureBinaryPath, "/"), mode: 0o755, body: bins[1]},
	})
	if err != nil {
		return nil, fmt.Errorf("image: binary layer: %w", err)
	}

	// Docker schema 2 media types, not OCI ones: a `docker save` tarball
	// keeps no manifest, and loading one (crane push FILE, tarball.Image)
	// rebuilds a schema 2 manifest; with these types it is byte for byte
	// the one built here, so every way out has the same digest.
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: sys, MediaType: types.DockerLayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "hactl hack/image: ca-certificates, passwd, group, /tmp",
		}},
		mutate.Addendum{Layer: agent, MediaType: types.DockerLayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "hactl hack/image: " + BinaryPath + ", " + CaptureBinaryPath,
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return configure(img, o, plat)
}

// withDefaults checks o and fills its defaults (an unknown commit, the
// default platform and CA bundle, creation at the epoch truncated to the
// second), with the platform parsed: linux only.
func (o Options) withDefaults() (Options, *v1.Platform, error) {
	switch {
	case o.Binary == "":
		return o, nil, errors.New("image: no binary given (the static kubectl-hactl to put in the image)")
	case o.CaptureBinary == "":
		return o, nil, errors.New("image: no capture binary given (the static hactl-capture to put in the image)")
	case o.Version == "":
		return o, nil, errors.New("image: no version given (the org.opencontainers.image.version label)")
	}
	if o.Commit == "" {
		o.Commit = "unknown"
	}
	if o.Platform == "" {
		o.Platform = DefaultPlatform
	}
	if o.CACerts == "" {
		o.CACerts = DefaultCACerts
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0)
	}
	o.Created = o.Created.UTC().Truncate(time.Second)
	plat, err := v1.ParsePlatform(o.Platform)
	if err != nil {
		return o, nil, fmt.Errorf("image: platform %q: %w", o.Platform, err)
	}
	if plat.OS != "linux" {
		return o, nil, fmt.Errorf("image: platform %q: the agent image is linux only", o.Platform)
	}
	return o, plat, nil
}

// readInputs reads the two binaries (checked to be static executables of
// plat's architecture) and the CA bundle (checked to hold a certificate).
func readInputs(o Options, plat *v1.Platform) (bins [2][]byte, certs []byte, err error) {
	for i, p := range []string{o.Binary, o.CaptureBinary} {
		if err := checkBinary(p, plat.Architecture); err != nil {
			return bins, nil, err
		}
		if bins[i], err = os.ReadFile(p); err != nil {
			return bins, nil, fmt.Errorf("image: reading the binary: %w", err)
		}
	}
	certs, err = os.ReadFile(o.CACerts)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return bins, nil, fmt.Errorf("image: no CA bundle at %s: install it (Debian: apt-get install ca-certificates) or pass its path", o.CACerts)
		}
		return bins, nil, fmt.Errorf("image: reading the CA bundle: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(certs) {
		return bins, nil, fmt.Errorf("image: the CA bundle %s holds no PEM certificate", o.CACerts)
	}
	return bins, certs, nil
}

// configure sets img's configuration: created at o.Created, plat's OS and
// architecture, the agent as entrypoint run as NonRoot, and the OCI
// labels naming the version, commit, source and title.
func configure(img v1.Image, o Options, plat *v1.Platform) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: o.Created}
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		User:       fmt.Sprintf("%d:%d", NonRoot, NonRoot),
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"SSL_CERT_FILE=" + CACertsPath,
		},
		WorkingDir: "/",
		Labels: map[string]string{
			LabelVersion:  o.Version,
			LabelRevision: o.Commit,
			LabelSource:   Source,
			LabelTitle:    Title,
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}

// checkBinary refuses what would not run in an empty image on arch.
func checkBinary(path, arch string) error {
	want, known := elfMachines[arch]
	if !known {
		return fmt.Errorf("image: architecture %q is not supported", arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("image: no binary at %s: build it first (make image does)", path)
		}
		return fmt.Errorf("image: %s is not a Linux executable: %w", path, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("image: %s is not an executable (%s)", path, f.Type)
	}
	if f.Machine != want {
		return fmt.Errorf("image: %s is built for %s, not linux/%s: cross-build it with CGO_ENABLED=0 GOOS=linux GOARCH=%s", path, f.Machine, arch, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(io.LimitReader(p.Open(), 256))
			return fmt.Errorf("image: %s is dynamically linked (interpreter %s) and the image has no libc: build it with CGO_ENABLED=0", path, strings.TrimRight(string(interp), "\x00"))
		}
	}
	return nil
}

// file is one tar entry: a directory when isDir, else a regular file.
type file struct {
	name     string
	mode     int64
	uid, gid int
	isDir    bool
	body     []byte
}

func dir(name string, mode int64) file { return file{name: name, mode: mode, isDir: true} }

// systemFiles is the system layer: what a static binary running as
// nonroot expects to find.
func systemFiles(certs []byte) []file {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)
	group := "root:x:0:\n" +
		"nobody:x:65534:\n" +
		fmt.Sprintf("nonroot:x:%d:\n", NonRoot)
	home := dir("home/nonroot", 0o700)
	home.uid, home.gid = NonRoot, NonRoot
	return []file{
		dir("etc", 0o755), dir("etc/ssl", 0o755), dir("etc/ssl/certs", 0o755),
		{name: strings.TrimPrefix(CACertsPath, "/"), mode: 0o644, body: certs},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		dir("home", 0o755), home,
		dir("root", 0o700),
		dir("tmp", 0o1777),
	}
}

// layer writes files as a gzipped tar, sorted by name (so a directory
// precedes what it holds), every entry stamped with mtime, and returns it
// as a (gzipped) layer.
func layer(mtime time.Time, files []file) (v1.Layer, error) {
	files = append([]file(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: mtime,
		}
		if f.isDir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	// An empty gzip header (no name, no mtime) keeps the blob a function
	// of the tar alone.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	blob := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(blob)), nil
	}, tarball.WithMediaType(types.DockerLayer))
}

// Size is what pushing img stores: the manifest, the config and every
// (compressed) layer.
func Size(img v1.Image) (int64, error) {
	m, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	c, err := img.RawConfigFile()
	if err != nil {
		return 0, err
	}
	n := int64(len(m) + len(c))
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, err
		}
		n += s
	}
	return n, nil
}
