package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"io"
	"log"
	"math"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// row is the part of TestScale's scaleRow the figure uses.
type row struct {
	URLs          int     `json:"urls"`
	Nodes         int     `json:"nodes"` // 0 in rows of older runs: 1
	Day           int     `json:"day"`
	CPUPer1000    float64 `json:"cpuPer1000"`
	RSSPeakMB     float64 `json:"rssPeakMB"`
	RolloverS     float64 `json:"rolloverS"`
	IntakeStallMS float64 `json:"intakeStallMs"`
}

// label names a run: its URLs, and its nodes when more than one.
func (r row) label() string {
	if r.Nodes > 1 {
		return fmt.Sprintf("%d URLs, %d nodes", r.URLs, r.Nodes)
	}
	return fmt.Sprintf("%d URLs", r.URLs)
}

// panel is one of the figure's plots: a title, a y label and the value of
// a row.
type panel struct {
	title, y string
	value    func(row) float64
	skipDay0 bool    // day 0 has no rollover, and fetches every page fresh
	limit    float64 // the acceptance bound, drawn dashed (0: none)
}

var panels = []panel{
	{"CPU per 1,000 pages", "CPU seconds", func(r row) float64 { return r.CPUPer1000 }, false, 0},
	{"Peak RSS (bound 512 MiB)", "MiB", func(r row) float64 { return r.RSSPeakMB }, false, 512},
	{"Rollover (NewDay, not blocking)", "seconds", func(r row) float64 { return r.RolloverS }, true, 0},
	{"Longest link intake, whole day (bound 1 s)", "milliseconds", func(r row) float64 { return r.IntakeStallMS }, true, 1000},
}

var colors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

func main() {
	out := flag.String("o", "scale.svg", "file to write: SVG, or PNG when it ends in .png")
	base := flag.Int("base", 1, "the first N files are runs of one size and day count, repeated: the ratios divide by their medians, the figure draws the first")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("plot: name one or more scale-<urls>x<days>.json files")
	}
	if *base < 1 || *base > flag.NArg() {
		log.Fatalf("plot: -base %d: want 1 to the %d files named", *base, flag.NArg())
	}
	var runs [][]row
	var full [][]fullRow
	for _, name := range flag.Args() {
		b, err := os.ReadFile(name)
		if err != nil {
			log.Fatalf("plot: %v", err)
		}
		var rs []row
		if err := json.Unmarshal(b, &rs); err != nil {
			log.Fatalf("plot: %s: %v", name, err)
		}
		if len(rs) == 0 {
			log.Fatalf("plot: %s has no rows", name)
		}
		var fs []fullRow
		if err := json.Unmarshal(b, &fs); err != nil {
			log.Fatalf("plot: %s: %v", name, err)
		}
		runs, full = append(runs, rs), append(full, fs)
	}
	if err := checkRepeats(full[:*base]); err != nil {
		log.Fatalf("plot: %v", err)
	}
	if err := draw4(*out, append(runs[:1:1], runs[*base:]...)); err != nil {
		log.Fatalf("plot: %v", err)
	}
	writeTables(os.Stdout, full, *base)
}

// draw4 writes the four panels, two by two, to out.
func draw4(out string, runs [][]row) error {
	const cols, rows = 2, 2
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	// The days' axis spans every run, at least one day: a panel that
	// skips day 0 has no points when each run has one day.
	lastDay := 1.0
	for _, rs := range runs {
		for _, r := range rs {
			lastDay = max(lastDay, float64(r.Day))
		}
	}
	for i, pn := range panels {
		p := plot.New()
		p.X.Min, p.X.Max = 0, lastDay
		p.Title.Text = pn.title
		p.X.Label.Text = "day"
		p.Y.Label.Text = pn.y
		p.Y.Min = 0
		p.Legend.Top = true
		for k, rs := range runs {
			var xys plotter.XYs
			for _, r := range rs {
				if pn.skipDay0 && r.Day == 0 {
					continue
				}
				xys = append(xys, plotter.XY{X: float64(r.Day), Y: pn.value(r)})
			}
			if len(xys) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			c := colors[k%len(colors)]
			l.Color, s.Color = c, c
			s.Radius = vg.Points(2)
			p.Add(l, s)
			if i == 0 { // one legend: the colors are the same in every panel
				p.Legend.Add(rs[0].label(), l, s)
			}
		}
		if pn.limit > 0 {
			lim, err := plotter.NewLine(plotter.XYs{{X: 0, Y: pn.limit}, {X: lastDay, Y: pn.limit}})
			if err != nil {
				return err
			}
			lim.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			lim.Color = color.Gray{Y: 0x80}
			p.Add(lim)
			p.Y.Max = max(p.Y.Max, pn.limit*1.1)
		}
		p.X.Tick.Marker = plot.TickerFunc(dayTicks)
		plots[i/cols][i%cols] = p
	}
	w, h := 24*vg.Centimeter, 18*vg.Centimeter
	var img interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(out, ".png") {
		img = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	} else {
		img = vgsvg.New(w, h)
	}
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// dayTicks marks whole days, about five of them.
func dayTicks(lo, hi float64) []plot.Tick {
	step := max(1, int(math.Ceil((hi-lo)/5)))
	var ts []plot.Tick
	for d := int(math.Ceil(lo)); float64(d) <= hi; d++ {
		t := plot.Tick{Value: float64(d)}
		if d%step == 0 {
			t.Label = fmt.Sprint(d)
		}
		ts = append(ts, t)
	}
	return ts
}
