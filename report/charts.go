package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/toolprof/toolprof/derive"
)

// Chart is one figure of the page: an SVG, or why there is none.
type Chart struct {
	Title string
	SVG   template.HTML // vgsvg output, inlined; its text is escaped by vgsvg
	Empty string        // why nothing is drawn, when SVG is empty
}

var (
	blue   = color.RGBA{B: 200, A: 255}
	orange = color.RGBA{R: 200, G: 120, A: 255}
	red    = color.RGBA{R: 200, A: 255}
)

// svg renders p as inline SVG: vgsvg's document less its XML declaration,
// which HTML does not take.
func svg(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("draw %q: %w", p.Title.Text, err)
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i >= 0 {
		out = out[i:]
	}
	// vgsvg escapes the text it draws (labels, profile names), so the
	// document is safe to inline.
	return template.HTML(out), nil
}

// frontierChart draws the cost/coverage frontier as derive --plot does
// (x: share of the full catalog's tokens, y: share of sessions covered):
// the convex hull's exact corners, the top-k baseline and each profile.
func (r *Report) frontierChart() (Chart, error) {
	ch := Chart{Title: "Cost / coverage frontier"}
	p := r.problem
	total := p.Free + p.Uncoverable
	for _, sg := range p.Sigs {
		total += sg.Weight
	}
	if r.FullTokens == 0 || total == 0 {
		ch.Empty = fmt.Sprintf("nothing to draw: %d sessions, %d catalog tokens", total, r.FullTokens)
		return ch, nil
	}
	xy := func(cost, covered int) plotter.XY {
		return plotter.XY{X: float64(cost) / float64(r.FullTokens), Y: float64(covered) / float64(total)}
	}
	front, err := derive.Frontier(p)
	if err != nil {
		return ch, fmt.Errorf("frontier: %w", err)
	}
	topk, err := derive.TopKCurve(p)
	if err != nil {
		return ch, fmt.Errorf("top-k curve: %w", err)
	}
	pl := plot.New()
	pl.Title.Text = "Cost / coverage frontier (sessions of the window)"
	pl.X.Label.Text = "share of full catalog tokens (o200k_base, model measure)"
	pl.Y.Label.Text = "sessions covered"
	pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = 0, 1, 0, 1
	pl.Add(plotter.NewGrid())
	var fpts, kpts plotter.XYs
	for _, f := range front {
		fpts = append(fpts, xy(f.Cost, f.Covered))
	}
	for _, k := range topk {
		kpts = append(kpts, xy(k.Cost, k.Covered))
	}
	fl, fs, err := plotter.NewLinePoints(fpts)
	if err != nil {
		return ch, fmt.Errorf("plot frontier: %w", err)
	}
	fl.Color, fs.Color = blue, blue
	kl, err := plotter.NewLine(kpts)
	if err != nil {
		return ch, fmt.Errorf("plot top-k: %w", err)
	}
	kl.Color = orange
	kl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	pl.Add(kl, fl, fs)
	pl.Legend.Add("convex hull (exact corners)", fl, fs)
	pl.Legend.Add("top-k by popularity", kl)
	if len(r.Points) > 0 {
		var marks plotter.XYLabels
		for _, pt := range r.Points {
			marks.XYs = append(marks.XYs, xy(pt.Tokens, pt.Covered))
			marks.Labels = append(marks.Labels, " "+pt.Name)
		}
		ps, err := plotter.NewScatter(marks.XYs)
		if err != nil {
			return ch, fmt.Errorf("plot profiles: %w", err)
		}
		ps.Shape = draw.CircleGlyph{}
		ps.Radius = vg.Points(4)
		ps.Color = red
		labels, err := plotter.NewLabels(marks)
		if err != nil {
			return ch, fmt.Errorf("plot labels: %w", err)
		}
		pl.Add(ps, labels)
		pl.Legend.Add("profiles", ps)
	}
	pl.Legend.Top = false
	pl.Legend.Left = false
	ch.SVG, err = svg(pl, 6*vg.Inch, 4.5*vg.Inch)
	return ch, err
}

// trendCharts draws sessions, calls and the share served by the default
// profile per day.
func (r *Report) trendCharts() ([]Chart, error) {
	series := []struct {
		title, y string
		value    func(Day) float64
		share    bool
	}{
		{"Sessions per day", "sessions", func(d Day) float64 { return float64(d.Sessions) }, false},
		{"Calls per day", "calls", func(d Day) float64 { return float64(d.Calls) }, false},
		{"Sessions fully served by the default profile (" + r.Default + ")", "share of the day's sessions", func(d Day) float64 { return d.ServedShare }, true},
	}
	var out []Chart
	for _, s := range series {
		ch := Chart{Title: s.title}
		if len(r.Days) == 0 {
			ch.Empty = "no sessions in the window"
			out = append(out, ch)
			continue
		}
		pts := make(plotter.XYs, len(r.Days))
		for i, d := range r.Days {
			t, err := time.Parse(time.DateOnly, d.Day)
			if err != nil {
				return nil, fmt.Errorf("day %q: %w", d.Day, err)
			}
			pts[i] = plotter.XY{X: float64(t.Unix()), Y: s.value(d)}
		}
		pl := plot.New()
		pl.Title.Text = s.title
		pl.Y.Label.Text = s.y
		pl.X.Label.Text = "day (UTC)"
		pl.X.Tick.Marker = plot.TimeTicks{Format: "2006-01-02"}
		pl.Y.Min = 0
		if s.share {
			pl.Y.Max = 1
		}
		pl.Add(plotter.NewGrid())
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", s.title, err)
		}
		l.Color, sc.Color = blue, blue
		sc.Shape = draw.CircleGlyph{}
		pl.Add(l, sc)
		if len(pts) == 1 { // one day: give the axis some width
			pl.X.Min, pl.X.Max = pts[0].X-43200, pts[0].X+43200
		}
		if ch.SVG, err = svg(pl, 6*vg.Inch, 2.6*vg.Inch); err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}
