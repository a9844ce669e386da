package derive

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The solver grid a frontier plot draws (derive --plot, profiler report):
// PlotGridTargets targets, each solved with local search cut short at
// PlotSearchWork steps, since the plot shows the frontier's shape and the
// profiles themselves get the full search.
const (
	PlotGridTargets = 20
	PlotSearchWork  = 1e6
)

// TopKCurve returns the popularity baseline's points: the top-k set's cost
// and coverage for k = 0..number of tools.
func TopKCurve(p Problem) ([]FrontierPoint, error) {
	s, err := newSolver(p, Options{})
	if err != nil {
		return nil, err
	}
	st := s.newState()
	out := []FrontierPoint{{Cost: st.cost, Covered: st.covered}}
	for _, t := range s.popularity() {
		st.add(t)
		out = append(out, FrontierPoint{Cost: st.cost, Covered: st.covered})
	}
	return out, nil
}

// Mark is a labelled point of a frontier plot: a profile at its cost and
// the sessions it covers.
type Mark struct {
	Name    string
	Tokens  int
	Covered int
}

// GridPoint is the solver's own set at one target of a grid: its cost
// and the sessions it covers.
type GridPoint struct {
	Target  float64
	Cost    int
	Covered int
}

// SolverGrid solves p at the targets 1/n, 2/n, ..., 1 (n > 0): the points
// that fill in the frontier between the hull's corners, which need not be
// convex there. Each is a solve, so opt.SearchWork bounds the cost.
func SolverGrid(p Problem, n int, opt Options) ([]GridPoint, error) {
	if n <= 0 {
		return nil, fmt.Errorf("solver grid of %d targets: want at least 1", n)
	}
	out := make([]GridPoint, 0, n)
	for k := 1; k <= n; k++ {
		target := float64(k) / float64(n)
		sol, err := Solve(p, target, opt)
		if err != nil {
			return nil, err
		}
		out = append(out, GridPoint{Target: target, Cost: sol.Cost, Covered: sol.Covered})
	}
	return out, nil
}

// PlotOptions says what a frontier plot shows beyond the hull's corners,
// the top-k baseline and the marks. The zero value draws those only.
type PlotOptions struct {
	Title  string // "" : "Cost / coverage frontier"
	XLabel string // "" : "share of full catalog tokens"
	// Grid, when not empty, is drawn as its own series: the solver's sets
	// at a grid of targets (SolverGrid).
	Grid []GridPoint
}

// GridColor is the colour of the solver grid's series.
func GridColor() color.RGBA { return color.RGBA{G: 140, A: 255} }

// ErrNothingToPlot is returned for a problem without sessions or costs.
var ErrNothingToPlot = errors.New("nothing to draw")

// FrontierPlot draws p's cost/coverage frontier (x: share of the full
// catalog's tokens, the sum of p.Costs; y: share of p's sessions covered,
// those no profile can serve included), the top-k baseline and marks:
// what derive --plot writes and profiler report shows.
func FrontierPlot(p Problem, marks []Mark, o PlotOptions) (*plot.Plot, error) {
	full := 0
	for _, c := range p.Costs {
		full += c
	}
	total := p.Free + p.Uncoverable
	for _, sg := range p.Sigs {
		total += sg.Weight
	}
	if full == 0 || total == 0 {
		return nil, fmt.Errorf("plot: %w (%d sessions, %d catalog tokens)", ErrNothingToPlot, total, full)
	}
	xy := func(cost, covered int) plotter.XY {
		return plotter.XY{X: float64(cost) / float64(full), Y: float64(covered) / float64(total)}
	}
	front, err := frontier(p, 6) // at most 63 cuts: enough corners to draw
	if err != nil {
		return nil, err
	}
	topk, err := TopKCurve(p)
	if err != nil {
		return nil, err
	}
	pl := plot.New()
	pl.Title.Text = cmp.Or(o.Title, "Cost / coverage frontier")
	pl.X.Label.Text = cmp.Or(o.XLabel, "share of full catalog tokens")
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
		return nil, fmt.Errorf("plot frontier: %w", err)
	}
	fl.Color, fs.Color = color.RGBA{B: 200, A: 255}, color.RGBA{B: 200, A: 255}
	kl, err := plotter.NewLine(kpts)
	if err != nil {
		return nil, fmt.Errorf("plot top-k: %w", err)
	}
	kl.Color = color.RGBA{R: 200, G: 120, A: 255}
	kl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	pl.Add(kl, fl, fs)
	pl.Legend.Add("convex hull (exact corners)", fl, fs)
	if len(o.Grid) > 0 {
		// The hull's corners are exact but the frontier between them need
		// not be convex: the solver's own points fill it in.
		var spts plotter.XYs
		for _, g := range o.Grid {
			spts = append(spts, xy(g.Cost, g.Covered))
		}
		sl, ss, err := plotter.NewLinePoints(spts)
		if err != nil {
			return nil, fmt.Errorf("plot solver: %w", err)
		}
		sl.Color, ss.Color = GridColor(), GridColor()
		ss.Shape = draw.BoxGlyph{}
		pl.Add(sl, ss)
		pl.Legend.Add(fmt.Sprintf("solver at targets %.2g..%.2g", o.Grid[0].Target, o.Grid[len(o.Grid)-1].Target), sl, ss)
	}
	pl.Legend.Add("top-k by popularity", kl)
	if len(marks) > 0 {
		var pts plotter.XYLabels
		for _, m := range marks {
			pts.XYs = append(pts.XYs, xy(m.Tokens, m.Covered))
			pts.Labels = append(pts.Labels, " "+m.Name)
		}
		ps, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return nil, fmt.Errorf("plot profiles: %w", err)
		}
		ps.Shape = draw.CircleGlyph{}
		ps.Radius = vg.Points(4)
		ps.Color = color.RGBA{R: 200, A: 255}
		labels, err := plotter.NewLabels(pts)
		if err != nil {
			return nil, fmt.Errorf("plot labels: %w", err)
		}
		pl.Add(ps, labels)
		pl.Legend.Add("profiles", ps)
	}
	pl.Legend.Top = false
	pl.Legend.Left = false
	return pl, nil
}

// marks are the plot's profile points: each profile at its cost and
// derive-part coverage.
func (res *Result) marks() []Mark {
	var marks []Mark
	for _, pr := range res.Profiles {
		marks = append(marks, Mark{Name: pr.Name, Tokens: pr.Tokens, Covered: pr.Derive.Covered})
	}
	return marks
}

// Plot draws the cost/coverage frontier of the derive part, the top-k
// baseline, the solver at a grid of targets and each profile, as a PNG
// marked as derive's (CheckPlotReplace).
func (res *Result) Plot(w io.Writer) error {
	marks := res.marks()
	opt := res.options
	opt.SearchWork = PlotSearchWork
	grid, err := SolverGrid(res.Problem, PlotGridTargets, opt)
	if err != nil {
		return err
	}
	p, err := FrontierPlot(res.Problem, marks, PlotOptions{
		Title:  "Cost / coverage frontier (derive part)",
		XLabel: "share of full catalog tokens (o200k_base)",
		Grid:   grid,
	})
	if err != nil {
		return err
	}
	wt, err := p.WriterTo(6*vg.Inch, 4.5*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	var png bytes.Buffer
	if _, err := wt.WriteTo(&png); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	marked, err := markPNG(png.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(marked)
	return err
}
