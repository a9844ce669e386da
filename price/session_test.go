package price

import (
	"math"
	"strings"
	"testing"
)

func TestSessionCost(t *testing.T) {
	def := DefaultCache()
	grow := CacheModel{Write: 1.25, Read: 0.1, Growth: 10}
	tests := []struct {
		name  string
		turns []Turn
		m     CacheModel
		want  float64
	}{
		{"empty session", nil, def, 0},
		{"no change: one write, then reads", []Turn{{Prefix: 1000, Changed: false}, {Prefix: 1000, Changed: false}, {Prefix: 1000, Changed: false}, {Prefix: 1000, Changed: false}}, def,
			1.25*1000 + 3*0.1*1000},
		{"first turn writes even when not marked changed", []Turn{{Prefix: 800, Changed: false}}, def, 1000},
		{"change at turn 2 writes the new prefix from there", []Turn{{Prefix: 1000, Changed: false}, {Prefix: 1000, Changed: false}, {Prefix: 1500, Changed: true}, {Prefix: 1500, Changed: false}}, def,
			1250 + 100 + 1.25*1500 + 0.1*1500},
		{"change every turn: every turn writes", []Turn{{Prefix: 100, Changed: true}, {Prefix: 200, Changed: true}, {Prefix: 300, Changed: true}, {Prefix: 400, Changed: true}}, def,
			1.25 * (100 + 200 + 300 + 400)},
		{"growth is read from the cache, written when new", []Turn{{Prefix: 1000, Changed: false}, {Prefix: 1000, Changed: false}, {Prefix: 1000, Changed: false}}, grow,
			1250 + (0.1*1000 + 1.25*10) + (0.1*1010 + 1.25*10)},
		{"a change invalidates the conversation after the tools", []Turn{{Prefix: 1000, Changed: false}, {Prefix: 1000, Changed: false}, {Prefix: 1200, Changed: true}}, grow,
			1250 + (0.1*1000 + 12.5) + 1.25*(1200+20)},
		{"added tokens are written once, then read", []Turn{{Prefix: 1000}, {Prefix: 1000, Added: 300}, {Prefix: 1000}}, def,
			1250 + (0.1*1000 + 1.25*300) + 0.1*1300},
		{"added tokens are written again on a change", []Turn{{Prefix: 1000, Added: 200}, {Prefix: 1000}, {Prefix: 1100, Changed: true}}, grow,
			1.25*1200 + (0.1*1200 + 12.5) + 1.25*(1100+200+20)},
		{"no caching: write and read at 1x is the plain sum", []Turn{{Prefix: 10, Changed: false}, {Prefix: 10, Changed: false}, {Prefix: 30, Changed: true}}, CacheModel{Write: 1, Read: 1}, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SessionCost(tc.turns, tc.m); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("SessionCost = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCacheModelCheck(t *testing.T) {
	for _, m := range []CacheModel{{Write: -1, Read: 0.1}, {Write: 1, Read: math.NaN()}, {Write: math.Inf(1)}, {Write: 1, Read: 1, Growth: -5}} {
		if err := m.Check(); err == nil {
			t.Errorf("Check(%+v) = nil, want an error", m)
		}
	}
	if err := DefaultCache().Check(); err != nil {
		t.Errorf("DefaultCache().Check() = %v", err)
	}
}

func TestNewSession(t *testing.T) {
	s, err := NewSession([]string{"a", "b", "a"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Turns != 4 || s.Calls[2] != (Call{"a", 2}) {
		t.Errorf("without turns: %+v, want 4 turns, call i at turn i", s)
	}
	s, err = NewSession([]string{"a", "b"}, []int{0, 2}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Turns != 3 || s.Calls[1] != (Call{"b", 2}) {
		t.Errorf("with turns: %+v", s)
	}
	for _, tc := range []struct {
		turns []int
		n     int
		want  string
	}{
		{[]int{0, -1}, 3, "turn none"},
		{[]int{0, 3}, 3, "in [0,2]"},
		{[]int{1, 0}, 3, "before the previous"},
		{[]int{0}, 3, "turn none"},
	} {
		if _, err := NewSession([]string{"a", "b"}, tc.turns, tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSession(turns %v of %d): err = %v, want %q", tc.turns, tc.n, err, tc.want)
		}
	}
}

func TestTurns(t *testing.T) {
	p := Prices{Tools: map[string]int{"a": 100, "b": 200, "c": 300, "d": 400}, Overhead: 50}
	full := []string{"a", "b", "c", "d"}
	sess := func(turns int, calls ...Call) Session { return Session{Turns: turns, Calls: calls} }
	tests := []struct {
		name    string
		s       Session
		l       Listing
		want    []Turn
		refused bool
	}{
		{"full lists everything throughout", sess(3, Call{"a", 0}, Call{"d", 1}), Listing{Base: full},
			[]Turn{{Prefix: 1050, Changed: false}, {Prefix: 1050, Changed: false}, {Prefix: 1050, Changed: false}}, false},
		{"floor: the used tools from the start", sess(2, Call{"a", 0}, Call{"b", 1}), Listing{Base: []string{"a", "b"}},
			[]Turn{{Prefix: 350, Changed: false}, {Prefix: 350, Changed: false}}, false},
		{"a group switches on at the turn of its first call", sess(4, Call{"a", 0}, Call{"c", 2}, Call{"d", 3}),
			Listing{Base: []string{"a"}, Groups: map[string][]string{"g": {"c", "d"}}, Fallback: full},
			[]Turn{{Prefix: 150, Changed: false}, {Prefix: 150, Changed: false}, {Prefix: 850, Changed: true}, {Prefix: 850, Changed: false}}, false},
		{"a call outside profile and groups falls back to full from that turn", sess(3, Call{"a", 0}, Call{"b", 1}, Call{"c", 2}),
			Listing{Base: []string{"a"}, Fallback: full},
			[]Turn{{Prefix: 150, Changed: false}, {Prefix: 1050, Changed: true}, {Prefix: 1050, Changed: false}}, true},
		{"without fallback a refused session keeps its listing", sess(2, Call{"b", 0}, Call{"b", 1}),
			Listing{Base: []string{"a"}},
			[]Turn{{Prefix: 150, Changed: false}, {Prefix: 150, Changed: false}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, refused := p.Turns(tc.s, tc.l)
			if refused != tc.refused {
				t.Errorf("refused = %v, want %v", refused, tc.refused)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("turns = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("turn %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestGroupedSessionTotal prices one hand-made session end to end: the
// grouped profile against full and the floor.
func TestGroupedSessionTotal(t *testing.T) {
	p := Prices{Tools: map[string]int{"a": 100, "b": 200, "c": 300, "d": 400}, Overhead: 0}
	s, err := NewSession([]string{"a", "c", "a"}, []int{0, 1, 2}, 3)
	if err != nil {
		t.Fatal(err)
	}
	m := DefaultCache()
	cost := func(l Listing) float64 { turns, _ := p.Turns(s, l); return SessionCost(turns, m) }
	if got, want := cost(Listing{Base: []string{"a", "b", "c", "d"}}), 1.25*1000+2*0.1*1000; math.Abs(got-want) > 1e-9 {
		t.Errorf("full = %v, want %v", got, want)
	}
	if got, want := cost(Listing{Base: []string{"a", "c"}}), 1.25*400+2*0.1*400; math.Abs(got-want) > 1e-9 {
		t.Errorf("floor = %v, want %v", got, want)
	}
	grouped := Listing{Base: []string{"a"}, Groups: map[string][]string{"g": {"c", "d"}}, Fallback: []string{"a", "b", "c", "d"}}
	if got, want := cost(grouped), 1.25*100+1.25*800+0.1*800; math.Abs(got-want) > 1e-9 {
		t.Errorf("grouped = %v, want %v", got, want)
	}
}

func TestSummarise(t *testing.T) {
	costs := make([]float64, 0, 20)
	for i := 20; i >= 1; i-- {
		costs = append(costs, float64(i))
	}
	got := Summarise(costs)
	if want := (Stats{Sessions: 20, Mean: 10.5, P50: 10, P95: 19}); got != want {
		t.Errorf("Summarise(1..20) = %+v, want %+v", got, want)
	}
	if got := Summarise(nil); got != (Stats{}) {
		t.Errorf("Summarise(nil) = %+v, want zero", got)
	}
}
