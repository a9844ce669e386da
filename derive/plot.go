package derive

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
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

// profileMarks are the plot's profile points: each profile at its cost and
// derive-part coverage, labelled with its name.
func (res *Result) profileMarks(xy func(cost, covered int) plotter.XY) plotter.XYLabels {
	var marks plotter.XYLabels
	for _, pr := range res.Profiles {
		marks.XYs = append(marks.XYs, xy(pr.Tokens, pr.Derive.Covered))
		marks.Labels = append(marks.Labels, " "+pr.Name)
	}
	return marks
}

// Plot draws the cost/coverage frontier of the derive part (x: share of the
// full catalog's tokens, y: sessions covered), the top-k baseline, and each
// profile, as a PNG.
func (res *Result) Plot(w io.Writer) error {
	full := 0
	for _, c := range res.Problem.Costs {
		full += c
	}
	total := res.Problem.Free
	for _, sg := range res.Problem.Sigs {
		total += sg.Weight
	}
	if full == 0 || total == 0 {
		return fmt.Errorf("plot: nothing to draw (%d derive sessions, %d catalog tokens)", total, full)
	}
	xy := func(cost, covered int) plotter.XY {
		return plotter.XY{X: float64(cost) / float64(full), Y: float64(covered) / float64(total)}
	}
	front, err := frontier(res.Problem, 6) // at most 63 cuts: enough corners to draw
	if err != nil {
		return err
	}
	topk, err := TopKCurve(res.Problem)
	if err != nil {
		return err
	}
	// The hull's corners are exact but the frontier between them need not
	// be convex: the solver's own points at a grid of targets fill it in.
	// Local search is cut short here (the plot shows the frontier's shape;
	// the profiles themselves get the full search).
	opt := res.options
	opt.SearchWork = 1e6
	var spts plotter.XYs
	for k := 1; k <= 20; k++ {
		sol, err := Solve(res.Problem, float64(k)/20, opt)
		if err != nil {
			return err
		}
		spts = append(spts, xy(sol.Cost, sol.Covered))
	}
	p := plot.New()
	p.Title.Text = "Cost / coverage frontier (derive part)"
	p.X.Label.Text = "share of full catalog tokens (o200k_base)"
	p.Y.Label.Text = "sessions covered"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Add(plotter.NewGrid())
	var fpts, kpts plotter.XYs
	for _, f := range front {
		fpts = append(fpts, xy(f.Cost, f.Covered))
	}
	for _, k := range topk {
		kpts = append(kpts, xy(k.Cost, k.Covered))
	}
	fl, fs, err := plotter.NewLinePoints(fpts)
	if err != nil {
		return fmt.Errorf("plot frontier: %w", err)
	}
	fl.Color, fs.Color = color.RGBA{B: 200, A: 255}, color.RGBA{B: 200, A: 255}
	kl, err := plotter.NewLine(kpts)
	if err != nil {
		return fmt.Errorf("plot top-k: %w", err)
	}
	kl.Color = color.RGBA{R: 200, G: 120, A: 255}
	kl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	ppts := res.profileMarks(xy)
	ps, err := plotter.NewScatter(ppts.XYs)
	if err != nil {
		return fmt.Errorf("plot profiles: %w", err)
	}
	ps.Shape = draw.CircleGlyph{}
	ps.Radius = vg.Points(4)
	ps.Color = color.RGBA{R: 200, A: 255}
	labels, err := plotter.NewLabels(ppts)
	if err != nil {
		return fmt.Errorf("plot labels: %w", err)
	}
	sl, ss, err := plotter.NewLinePoints(spts)
	if err != nil {
		return fmt.Errorf("plot solver: %w", err)
	}
	sl.Color, ss.Color = color.RGBA{G: 140, A: 255}, color.RGBA{G: 140, A: 255}
	ss.Shape = draw.BoxGlyph{}
	p.Add(kl, fl, fs, sl, ss, ps, labels)
	p.Legend.Add("convex hull (exact corners)", fl, fs)
	p.Legend.Add("solver at targets 0.05..1", sl, ss)
	p.Legend.Add("top-k by popularity", kl)
	p.Legend.Add("profiles", ps)
	p.Legend.Top = false
	p.Legend.Left = false
	wt, err := p.WriterTo(6*vg.Inch, 4.5*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}
