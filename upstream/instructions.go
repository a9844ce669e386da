package upstream

import "github.com/toolprof/toolprof/catalog"

// Instructions are the instructions the server sent in the initialize
// result of its current session; "" while it has none (never sent, or
// the server is down).
func (c *Client) Instructions() string {
	c.mu.Lock()
	cs := c.session
	c.mu.Unlock()
	if cs == nil {
		return ""
	}
	if r := cs.InitializeResult(); r != nil {
		return r.Instructions
	}
	return ""
}

// Instructions are the instructions of every server that sent some, in
// launch-document order (by server name).
func (s *Set) Instructions() []catalog.ServerInstructions {
	var out []catalog.ServerInstructions
	for _, c := range s.clients {
		if text := c.Instructions(); text != "" {
			out = append(out, catalog.ServerInstructions{Server: c.Name(), Instructions: text})
		}
	}
	return out
}
