package derive

import (
	"bytes"
	"image/png"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestPlotMarksEachProfile: the frontier plot marks every profile at its
// cost and derive-part coverage, labelled with its name, and the PNG holds
// the marks' colour; with nothing derived it refuses, naming why.
func TestPlotMarksEachProfile(t *testing.T) {
	res, err := Derive(fixtureSessions(), Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	marks := res.profileMarks(func(cost, covered int) plotter.XY { return plotter.XY{X: float64(cost), Y: float64(covered)} })
	if !slices.Equal(marks.Labels, []string{" core", " standard", " full"}) {
		t.Errorf("labels %q, want one per profile", marks.Labels)
	}
	for i, pr := range res.Profiles {
		if i >= len(marks.XYs) || marks.XYs[i] != (plotter.XY{X: float64(pr.Tokens), Y: float64(pr.Derive.Covered)}) {
			t.Errorf("%s marked at %v, want (%d, %d)", pr.Name, marks.XYs, pr.Tokens, pr.Derive.Covered)
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
	if err := empty.Plot(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "nothing to draw (0 derive sessions") {
		t.Errorf("plot of no sessions: %v, want nothing to draw", err)
	}
}
