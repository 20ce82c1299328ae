// Command costplot draws the curves hactl's benchmarks measure, from
// their points ("x,metric,value" lines):
//
//   - -curve cost (the default): BenchmarkCostCurve's, as
//     HACTL_BENCH_CURVE_CSV collects them; three panels over the number of
//     clusters (log–log): wall time, peak RSS and API calls of hactl's
//     status (table, JSON, probed in process), the TUI's first frame and
//     kubectl get (table, JSON);
//
//   - -curve fleet: BenchmarkFleetCurve's (HACTL_BENCH_FLEET_CSV); three
//     panels over the number of contexts: the wall time of status
//     --all-contexts and of the slowest context alone, its peak RSS, and
//     the ratio of the two (against the 1.3 goal).
//
//     go run . -in ../../bench/costcurve.csv -out ../../bench/costcurve.png
//     go run . -curve fleet -in ../../bench/fleetcurve.csv -out ../../bench/fleetcurve.png
//
// It is a module of its own so that the plotting library stays out of
// hactl's build.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// seriesDef is one line: the metric key+panel suffix it draws.
type seriesDef struct {
	key, label string
	colour     color.RGBA
	dashed     bool
}

// panelDef is one panel: the metric suffix it draws of every series.
type panelDef struct {
	suffix, title, unit string
	// linear draws the y axis linearly (ratios near 1), with a dotted
	// line at goal when it is set.
	linear bool
	goal   float64
}

// curveDef is what one benchmark's curve draws.
type curveDef struct {
	xLabel string
	series []seriesDef
	panels []panelDef
}

var curves = map[string]curveDef{
	"cost": {
		xLabel: "clusters",
		series: []seriesDef{
			{"status", "hactl status --no-probe", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, false},
			{"status-json", "hactl status --no-probe -o json", color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, false},
			{"status-probed", "hactl status, every member probed (in process)", color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, false},
			{"tui-first-frame", "hactl TUI, first frame (--no-probe)", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, false},
			{"kubectl-get", "kubectl get sts,pods,pvc", color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, true},
			{"kubectl-get-json", "kubectl get sts,pods,pvc -o json", color.RGBA{R: 0x17, G: 0x17, B: 0x17, A: 0xff}, true},
		},
		panels: []panelDef{
			{suffix: "-ms", title: "wall time over clusters × 3 members", unit: "ms"},
			{suffix: "-peak-MiB", title: "peak RSS over clusters × 3 members", unit: "MiB"},
			{suffix: "-api-calls", title: "API calls over clusters × 3 members", unit: "calls"},
		},
	},
	"fleet": {
		xLabel: "contexts (each 25 ms from its API server, each way)",
		series: []seriesDef{
			{"fleet", "hactl status --all-contexts", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, false},
			{"slowest-context", "the slowest context alone", color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, true},
			{"wall-ratio", "all contexts ÷ the slowest alone", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, false},
			{"wall-ratio-vs-median", "all contexts ÷ the median context alone", color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, true},
		},
		panels: []panelDef{
			{suffix: "-ms", title: "wall time over contexts", unit: "ms", linear: true},
			{suffix: "-peak-MiB", title: "peak RSS over contexts", unit: "MiB", linear: true},
			{suffix: "", title: "wall time ratio (goal ≤ 1.3 at 10)", unit: "×", linear: true, goal: 1.3},
		},
	},
}

func main() {
	in := flag.String("in", "bench/costcurve.csv", "the benchmark's points")
	out := flag.String("out", "bench/costcurve.png", "the PNG to write")
	name := flag.String("curve", "cost", "which curve: cost or fleet")
	flag.Parse()
	c, ok := curves[*name]
	if !ok {
		fmt.Fprintf(os.Stderr, "costplot: -curve %q: want cost or fleet\n", *name)
		os.Exit(2)
	}
	if err := run(c, *in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "costplot:", err)
		os.Exit(1)
	}
}

func run(c curveDef, in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	points, err := read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	const w, h = 5 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w*vg.Length(len(c.panels)), h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(c.panels), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	for i, pn := range c.panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = c.xLabel
		p.Y.Label.Text = pn.unit
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = ticks125{}, ticks125{}
		if pn.linear {
			p.Y.Scale, p.Y.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
		}
		p.Legend.Top, p.Legend.Left = true, true
		p.Add(plotter.NewGrid())
		if pn.goal > 0 {
			goal := plotter.NewFunction(func(float64) float64 { return pn.goal })
			goal.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
			p.Add(goal)
			p.Legend.Add(fmt.Sprintf("goal %g", pn.goal), goal)
		}
		drawn := 0
		for _, s := range c.series {
			xys := points[s.key+pn.suffix]
			if len(xys) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			l.Color, sc.Color = s.colour, s.colour
			if s.dashed {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l, sc)
			p.Legend.Add(s.label, l, sc)
			drawn++
		}
		if drawn == 0 {
			return fmt.Errorf("no points for %s", pn.title)
		}
		p.Draw(tiles.At(dc, i, 0))
	}
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(o); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// ticks125 labels 1, 2 and 5 times each power of ten on a log axis, so an
// axis spanning less than a decade still has labels.
type ticks125 struct{}

// Ticks implements plot.Ticker.
func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ts
}

// read parses "clusters,metric,value" lines into each metric's points,
// sorted by clusters. A metric measured more than once at a size keeps its
// last value.
func read(r io.Reader) (map[string]plotter.XYs, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 3
	byMetric := map[string]map[float64]float64{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64)
		if err != nil {
			return nil, err
		}
		y, err := strconv.ParseFloat(strings.TrimSpace(rec[2]), 64)
		if err != nil {
			return nil, err
		}
		m := strings.TrimSpace(rec[1])
		if byMetric[m] == nil {
			byMetric[m] = map[float64]float64{}
		}
		byMetric[m][x] = y
	}
	out := map[string]plotter.XYs{}
	for m, pts := range byMetric {
		xs := make([]float64, 0, len(pts))
		for x := range pts {
			xs = append(xs, x)
		}
		slices.Sort(xs)
		for _, x := range xs {
			if pts[x] > 0 { // a log axis has no zero
				out[m] = append(out[m], plotter.XY{X: x, Y: pts[x]})
			}
		}
	}
	return out, nil
}
