package report

import (
	"bytes"
	"errors"
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

// blue is the trend charts' line colour, the frontier's.
var blue = color.RGBA{B: 200, A: 255}

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

// frontierChart draws the cost/coverage frontier with derive's plot
// (derive.FrontierPlot: the hull's exact corners, the solver's grid, the
// top-k baseline and each profile) over the window's sessions.
func (r *Report) frontierChart() (Chart, error) {
	ch := Chart{Title: "Cost / coverage frontier"}
	marks := make([]derive.Mark, 0, len(r.Points))
	for _, pt := range r.Points {
		marks = append(marks, derive.Mark{Name: pt.Name, Tokens: pt.Tokens, Covered: pt.Covered})
	}
	grid := make([]derive.GridPoint, 0, len(r.Grid))
	for _, g := range r.Grid {
		grid = append(grid, derive.GridPoint{Target: g.Target, Cost: g.Tokens, Covered: g.Covered})
	}
	pl, err := derive.FrontierPlot(r.problem, marks, derive.PlotOptions{
		Title:  "Cost / coverage frontier (sessions of the window)",
		XLabel: "share of full catalog tokens (o200k_base, model measure)",
		Grid:   grid,
	})
	if errors.Is(err, derive.ErrNothingToPlot) {
		ch.Empty = err.Error()
		return ch, nil
	}
	if err != nil {
		return ch, err
	}
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
