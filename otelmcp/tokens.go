package otelmcp

import (
	"encoding/json"
	"errors"
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
// profile's pages repeat until the catalog changes. Requests that list
// the same page at once wait for the one measuring it rather than each
// tokenizing it again.
type listingMeasure struct {
	// model measures a page's tools; set before use.
	model func([]price.Tool) (int, error)
	seed  maphash.Seed

	mu    sync.Mutex
	known map[uint64]*measured // hash of the page's definitions -> its measure
}

// measured is one page's measure: n and err are set before done closes.
type measured struct {
	done chan struct{}
	n    int
	err  error
}

func newListingMeasure() (*listingMeasure, error) {
	c, err := price.NewCounter()
	if err != nil {
		return nil, fmt.Errorf("otel: tool definitions' tokens: %w", err)
	}
	model := func(tools []price.Tool) (int, error) {
		cost, err := price.Model(c, price.DefaultFamily, tools, "")
		if err != nil {
			return 0, err
		}
		return cost.Tools[price.O200kBase], nil
	}
	return &listingMeasure{model: model, seed: maphash.MakeSeed(), known: map[uint64]*measured{}}, nil
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
	e, ok := m.known[key]
	if !ok {
		if len(m.known) >= maxMeasured {
			clear(m.known) // a page being measured still answers those waiting on it
		}
		e = &measured{done: make(chan struct{})}
		m.known[key] = e
	}
	m.mu.Unlock()
	if !ok {
		m.fill(key, e, defs)
	}
	<-e.done
	return e.n, e.err
}

// errUnmeasured is the measure of a page whose measuring panicked, for
// those waiting on it.
var errUnmeasured = errors.New("the page's measure did not finish")

// fill measures defs into e, the entry of key, and then wakes those
// waiting on it. A failed measure is not kept, so the next listing of the
// page tries again.
func (m *listingMeasure) fill(key uint64, e *measured, defs []json.RawMessage) {
	defer func() {
		if e.err != nil {
			m.mu.Lock()
			if m.known[key] == e {
				delete(m.known, key)
			}
			m.mu.Unlock()
		}
		close(e.done)
	}()
	e.err = errUnmeasured
	e.n, e.err = m.measure(defs)
}

// measure tokenizes one page's tool definitions.
func (m *listingMeasure) measure(defs []json.RawMessage) (int, error) {
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
	return m.model(tools)
}
