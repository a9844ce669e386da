package derive

import (
	"bytes"
	"image/png"
	"slices"
	"strings"
	"testing"
)

// TestPlotMarksEachProfile: the frontier plot marks every profile at its
// cost and derive-part coverage, labelled with its name, and the PNG holds
// the marks' colour; with nothing derived it refuses, naming why.
func TestPlotMarksEachProfile(t *testing.T) {
	res, err := Derive(fixtureSessions(), Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	marks := res.marks()
	var names []string
	for _, m := range marks {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{"core", "standard", "full"}) {
		t.Errorf("marks %q, want one per profile", names)
	}
	for i, pr := range res.Profiles {
		if i >= len(marks) || marks[i] != (Mark{Name: pr.Name, Tokens: pr.Tokens, Covered: pr.Derive.Covered}) {
			t.Errorf("%s marked at %v, want (%d, %d)", pr.Name, marks, pr.Tokens, pr.Derive.Covered)
		}
	}

	var buf bytes.Buffer
	if err := res.Plot(&buf); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	red := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r>>8 == 200 && g == 0 && bl == 0 {
				red++
			}
		}
	}
	if red == 0 {
		t.Error("no pixel in the profiles' marker colour: profiles not drawn")
	}

	empty, err := Derive(nil, Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	if err := empty.Plot(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "nothing to draw (0 sessions") {
		t.Errorf("plot of no sessions: %v, want nothing to draw", err)
	}
}

// TestSolverGrid: the grid is Solve at each target k/n, in order; a grid
// of no targets is refused.
func TestSolverGrid(t *testing.T) {
	res, err := Derive(fixtureSessions(), Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{SearchWork: PlotSearchWork}
	grid, err := SolverGrid(res.Problem, 4, opt)
	if err != nil {
		t.Fatal(err)
	}
	var want []GridPoint
	for _, target := range []float64{0.25, 0.5, 0.75, 1} {
		sol, err := Solve(res.Problem, target, opt)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, GridPoint{Target: target, Cost: sol.Cost, Covered: sol.Covered})
	}
	if !slices.Equal(grid, want) {
		t.Errorf("grid %v, want %v", grid, want)
	}
	if _, err := SolverGrid(res.Problem, 0, opt); err == nil || !strings.Contains(err.Error(), "want at least 1") {
		t.Errorf("grid of 0 targets: %v, want refused", err)
	}
}
