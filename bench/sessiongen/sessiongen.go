// Package sessiongen generates synthetic but realistic MCP sessions over a
// tool catalog, deterministically from a seed, for scale tests of the
// derivation.
//
// Realistic here means the two shapes real traces show: tool popularity is
// heavy-tailed (a few tools in most sessions, a long tail used rarely), and
// sessions use clustered tool sets (a workflow touches a handful of related
// tools, sometimes two workflows, rarely a stray tool). Concretely the tools
// are split into Clusters contiguous groups of a seeded permutation; a
// session picks a cluster by a Zipf law, 1 to MaxTools tools within it by a
// Zipf law over the cluster's members, adds a second cluster's tool with
// probability SecondCluster and a uniformly random tool with probability
// Stray, calls each chosen tool 1 to 3 times in shuffled order, and has no
// call at all with probability ZeroCalls.
package sessiongen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Config describes a generated workload. Zero fields take the defaults
// documented on each.
type Config struct {
	Seed          uint64
	Sessions      int
	Tools         []string      // catalog tool names (see Catalog)
	Clusters      int           // default: len(Tools)/8, at least 1
	MaxTools      int           // most distinct tools from the main cluster; default 5
	ZipfS         float64       // Zipf exponent (> 1); default 1.3
	SecondCluster float64       // default 0.15
	Stray         float64       // default 0.03
	ZeroCalls     float64       // default 0.03
	Start         time.Time     // first session start; default 2026-01-01T00:00:00Z
	Spacing       time.Duration // between session starts; default 1s
}

func (c Config) withDefaults() Config {
	if c.Clusters <= 0 {
		c.Clusters = max(1, len(c.Tools)/8)
	}
	if c.MaxTools <= 0 {
		c.MaxTools = 5
	}
	if c.ZipfS <= 1 {
		c.ZipfS = 1.3
	}
	if c.SecondCluster == 0 {
		c.SecondCluster = 0.15
	}
	if c.Stray == 0 {
		c.Stray = 0.03
	}
	if c.ZeroCalls == 0 {
		c.ZeroCalls = 0.03
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.Spacing == 0 {
		c.Spacing = time.Second
	}
	return c
}

// Session is one generated session: its calls, in order.
type Session struct {
	ID    string
	Start time.Time
	Calls []string
}

// Each generates the sessions in order and passes each to fn; fn must not
// keep s.Calls past the call (the slice is reused).
func Each(cfg Config, fn func(s Session) error) error {
	cfg = cfg.withDefaults()
	if len(cfg.Tools) == 0 {
		return fmt.Errorf("sessiongen: no tools")
	}
	if cfg.Clusters > len(cfg.Tools) {
		return fmt.Errorf("sessiongen: %d clusters for %d tools; want at most one cluster per tool", cfg.Clusters, len(cfg.Tools))
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5e55))
	perm := r.Perm(len(cfg.Tools))
	clusters := make([][]string, cfg.Clusters)
	for i, p := range perm {
		k := i * cfg.Clusters / len(perm)
		clusters[k] = append(clusters[k], cfg.Tools[p])
	}
	clusterZipf := newZipf(cfg.Clusters, cfg.ZipfS)
	memberZipf := make([]*zipf, cfg.Clusters)
	for k, c := range clusters {
		memberZipf[k] = newZipf(len(c), cfg.ZipfS)
	}
	var chosen, calls []string
	for i := range cfg.Sessions {
		chosen, calls = chosen[:0], calls[:0]
		if r.Float64() >= cfg.ZeroCalls {
			k := clusterZipf.draw(r)
			n := 1 + r.IntN(min(cfg.MaxTools, len(clusters[k])))
			for range n {
				chosen = appendNew(chosen, clusters[k][memberZipf[k].draw(r)])
			}
			if r.Float64() < cfg.SecondCluster {
				k2 := clusterZipf.draw(r)
				chosen = appendNew(chosen, clusters[k2][memberZipf[k2].draw(r)])
			}
			if r.Float64() < cfg.Stray {
				chosen = appendNew(chosen, cfg.Tools[r.IntN(len(cfg.Tools))])
			}
			for _, t := range chosen {
				for range 1 + r.IntN(3) {
					calls = append(calls, t)
				}
			}
			r.Shuffle(len(calls), func(a, b int) { calls[a], calls[b] = calls[b], calls[a] })
		}
		s := Session{ID: "gen/" + strconv.Itoa(i), Start: cfg.Start.Add(time.Duration(i) * cfg.Spacing), Calls: calls}
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// zipf draws ranks 0..n-1 with P(k) proportional to 1/(k+1)^s, by inverse
// CDF over a precomputed table (rand.Zipf needs its own *rand.Rand of v1).
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) *zipf {
	z := &zipf{cdf: make([]float64, n)}
	sum := 0.0
	for k := range n {
		sum += 1 / math.Pow(float64(k+1), s)
		z.cdf[k] = sum
	}
	for k := range z.cdf {
		z.cdf[k] /= sum
	}
	return z
}

func (z *zipf) draw(r *rand.Rand) int {
	u := r.Float64()
	lo, hi := 0, len(z.cdf)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if z.cdf[mid] < u {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// WriteTrace writes the sessions as session JSON Lines (the trace format of
// the shared data README), without a "profile": each saw every tool.
func WriteTrace(w io.Writer, cfg Config) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var line []byte
	err := Each(cfg, func(s Session) error {
		line = append(line[:0], `{"session":`...)
		line = strconv.AppendQuote(line, s.ID)
		line = append(line, `,"client":{"name":"sessiongen","version":"1"},"started":"`...)
		line = s.Start.UTC().AppendFormat(line, time.RFC3339)
		line = append(line, `","calls":[`...)
		for i, c := range s.Calls {
			if i > 0 {
				line = append(line, ',')
			}
			line = append(line, `{"tool":`...)
			line = strconv.AppendQuote(line, c)
			line = append(line, '}')
		}
		line = append(line, "]}\n"...)
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// ToolNames returns n tool names in the "server__tool" style of aggregated
// catalogs.
func ToolNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("server%02d__tool_%03d", i/16, i)
	}
	return names
}

// WriteCatalog writes a tools/list result for names, with descriptions and
// schemas of varied, seeded length so that tools cost different amounts.
func WriteCatalog(w io.Writer, names []string, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0xca7))
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}
	type schema struct {
		Type       string          `json:"type"`
		Properties map[string]prop `json:"properties"`
	}
	type tool struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema schema `json:"inputSchema"`
	}
	words := strings.Fields("list read create update delete search fetch the a of resource item record page owner repository branch file issue comment user project query filter limit offset returns matching given by identifier when optional required")
	sentence := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	tools := make([]tool, len(names))
	for i, n := range names {
		props := map[string]prop{}
		for j := range 1 + r.IntN(6) {
			props[fmt.Sprintf("arg%d", j)] = prop{Type: "string", Description: sentence(3 + r.IntN(12))}
		}
		tools[i] = tool{Name: n, Description: sentence(8 + r.IntN(60)), InputSchema: schema{Type: "object", Properties: props}}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(map[string]any{"tools": tools})
}
