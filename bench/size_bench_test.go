package bench

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hactl-dev/hactl/internal/testenv"
)

// BenchmarkBinarySize records the plugin's size as `make build` writes it
// (static, stripped: the release flags) next to the real kubectl's (built
// from the Go module proxy by hack/testbins.sh), and both gzip'd at the
// best level as in the krew archive. The bounds (80 MB, 20 MB archive)
// are held by krew's test; docs/size.md has the breakdown.
func BenchmarkBinarySize(b *testing.B) {
	kubectl := filepath.Join(testenv.BinDir(b), "kubectl")
	var hactl string
	for i := 0; i < b.N; i++ {
		hactl = releaseBuild(b)
	}
	hs, hz := sizes(b, hactl)
	ks, kz := sizes(b, kubectl)
	b.ReportMetric(float64(hs)/float64(ks), "size-ratio")
	b.ReportMetric(float64(hz)/float64(kz), "gzip-size-ratio")
	b.ReportMetric(float64(hs)/1e6, "hactl-MB")
	b.ReportMetric(float64(hz)/1e6, "hactl-gzip-MB")
	b.ReportMetric(float64(ks)/1e6, "kubectl-MB")
	b.ReportMetric(float64(kz)/1e6, "kubectl-gzip-MB")
}

// sizes is a file's size and its gzip -9 size.
func sizes(b *testing.B, path string) (plain, gz int64) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var n countWriter
	zw, err := gzip.NewWriterLevel(&n, gzip.BestCompression)
	if err != nil {
		b.Fatal(err)
	}
	plain, err = io.Copy(zw, f)
	if err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	return plain, int64(n)
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
