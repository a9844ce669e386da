package otelmcp

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/toolprof/toolprof/price"
)

// maxMeasured bounds the listings whose measure is kept: past it the
// cache starts over, so a gateway that serves ever new listings (reloads,
// groups switched on) holds no more than this many.
const maxMeasured = 256

// listingMeasure is the model measure of tools/list pages: the tokens of
// the tools array a client forwards to the model (price.DefaultFamily, in
// price.O200kBase), the figure derive and the handshake budget use. A
// listing is tokenized once and remembered by the hash of its bytes: a
// profile's pages repeat until the catalog changes.
type listingMeasure struct {
	counter *price.Counter
	seed    maphash.Seed

	mu    sync.Mutex
	known map[uint64]int // hash of the page's definitions -> tokens
}

func newListingMeasure() (*listingMeasure, error) {
	c, err := price.NewCounter()
	if err != nil {
		return nil, fmt.Errorf("otel: tool definitions' tokens: %w", err)
	}
	return &listingMeasure{counter: c, seed: maphash.MakeSeed(), known: map[uint64]int{}}, nil
}

// tokens is the model measure of one page's tool definitions as served.
func (m *listingMeasure) tokens(defs []json.RawMessage) (int, error) {
	var h maphash.Hash
	h.SetSeed(m.seed)
	for _, d := range defs {
		h.Write(d)
		h.WriteByte(0) // no two splits of the same bytes hash alike
	}
	key := h.Sum64()
	m.mu.Lock()
	n, ok := m.known[key]
	m.mu.Unlock()
	if ok {
		return n, nil
	}
	tools := make([]price.Tool, len(defs))
	for i, d := range defs {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(d, &t); err != nil {
			return 0, fmt.Errorf("tools[%d]: %w", i, err)
		}
		tools[i] = price.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	cost, err := price.Model(m.counter, price.DefaultFamily, tools, "")
	if err != nil {
		return 0, err
	}
	n = cost.Tools[price.O200kBase]
	m.mu.Lock()
	if len(m.known) >= maxMeasured {
		clear(m.known)
	}
	m.known[key] = n
	m.mu.Unlock()
	return n, nil
}
