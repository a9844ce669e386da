package price

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Family is a client family whose model request the model measure prices.
type Family string

// The client families.
const (
	Anthropic Family = "anthropic"
	OpenAI    Family = "openai"
)

// DefaultFamily is the family of the default model measure: the headline
// share, derive's costs and budgets, and the server's
// --max-handshake-tokens.
const DefaultFamily = Anthropic

// Families returns the families priced, in report order.
func Families() []Family { return []Family{Anthropic, OpenAI} }

// ParseFamily checks a family name.
func ParseFamily(s string) (Family, error) {
	for _, f := range Families() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("client family %q: want %s or %s", s, Anthropic, OpenAI)
}

// Tool is what the model measure reads of a tool definition.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the schema's JSON as served; nil is {"type":"object"}.
	InputSchema json.RawMessage
}

// ModelCost is the model measure of one set of tools and instructions under
// one family, per tokenizer.
type ModelCost struct {
	Tools        map[string]int `json:"tools"`
	Instructions map[string]int `json:"instructions"`
	Total        map[string]int `json:"total"`
}

// EncodeTool is one tool as the family's request carries it.
func EncodeTool(f Family, t Tool) ([]byte, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	if len(bytes.TrimSpace(t.InputSchema)) > 0 && !bytes.Equal(bytes.TrimSpace(t.InputSchema), []byte("null")) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, t.InputSchema); err != nil {
			return nil, fmt.Errorf("tool %q: input schema is not JSON: %w", t.Name, err)
		}
		schema = buf.Bytes()
	}
	var b bytes.Buffer
	b.WriteByte('{')
	if f == OpenAI {
		b.WriteString(`"type":"function",`)
	}
	b.WriteString(`"name":`)
	b.Write(encodeString(t.Name))
	if t.Description != "" {
		b.WriteString(`,"description":`)
		b.Write(encodeString(t.Description))
	}
	switch f {
	case Anthropic:
		b.WriteString(`,"input_schema":`)
	case OpenAI:
		b.WriteString(`,"parameters":`)
	default:
		return nil, fmt.Errorf("client family %q: want %s or %s", f, Anthropic, OpenAI)
	}
	b.Write(schema)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// EncodeTools is the tools array as the family's request carries it.
func EncodeTools(f Family, tools []Tool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range tools {
		if i > 0 {
			b.WriteByte(',')
		}
		e, err := EncodeTool(f, t)
		if err != nil {
			return nil, err
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// EncodeInstructions is the instructions as the family's request carries
// them; nil when there are none.
func EncodeInstructions(f Family, instructions string) ([]byte, error) {
	if instructions == "" {
		return nil, nil
	}
	switch f {
	case Anthropic:
		var b bytes.Buffer
		b.WriteString(`{"type":"text","text":`)
		b.Write(encodeString(instructions))
		b.WriteByte('}')
		return b.Bytes(), nil
	case OpenAI:
		return encodeString(instructions), nil
	}
	return nil, fmt.Errorf("client family %q: want %s or %s", f, Anthropic, OpenAI)
}

// Model prices tools and instructions under family f.
func Model(c *Counter, f Family, tools []Tool, instructions string) (ModelCost, error) {
	arr, err := EncodeTools(f, tools)
	if err != nil {
		return ModelCost{}, fmt.Errorf("model measure (%s): %w", f, err)
	}
	instr, err := EncodeInstructions(f, instructions)
	if err != nil {
		return ModelCost{}, fmt.Errorf("model measure: %w", err)
	}
	m := ModelCost{Total: map[string]int{}}
	if m.Tools, err = c.Count(string(arr)); err != nil {
		return ModelCost{}, fmt.Errorf("model measure (%s): %w", f, err)
	}
	if m.Instructions, err = c.Count(string(instr)); err != nil {
		return ModelCost{}, fmt.Errorf("model measure (%s): %w", f, err)
	}
	for k, v := range m.Tools {
		m.Total[k] = v + m.Instructions[k]
	}
	return m, nil
}

// ToolTokens prices each tool's own entry under family f, in o200k_base
// tokens, in the order given: what derive sums and minimises.
func ToolTokens(c *Counter, f Family, tools []Tool) ([]int, error) {
	out := make([]int, len(tools))
	for i, t := range tools {
		e, err := EncodeTool(f, t)
		if err != nil {
			return nil, fmt.Errorf("model measure (%s): %w", f, err)
		}
		n, err := c.CountWith(O200kBase, string(e))
		if err != nil {
			return nil, fmt.Errorf("model measure (%s) of tool %q: %w", f, t.Name, err)
		}
		out[i] = n
	}
	return out, nil
}

// encodeString is s as a JSON string without HTML escaping, as the clients'
// encoders write it.
func encodeString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
