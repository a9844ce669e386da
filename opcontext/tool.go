package opcontext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the read-only tool that serves the operating context.
const ToolName = "get_operating_context"

// Preview is the no-argument answer of get_operating_context.
type Preview struct {
	ContextRevision     string            `json:"context_revision"`
	InstructionsSummary string            `json:"instructions_summary"`
	Registry            PreviewRegistry   `json:"registry"`
	Defaults            map[string]string `json:"defaults"`
	DoctrineSections    []string          `json:"doctrine_sections"`
}

// PreviewRegistry is the registry part of the preview.
type PreviewRegistry struct {
	ProjectIDs []string `json:"project_ids"` // null when the file has no registry
	Enforce    Enforce  `json:"enforce"`
	Argument   string   `json:"argument"`
}

// Section is the answer for one doctrine section.
type Section struct {
	ContextRevision string `json:"context_revision"`
	Section         string `json:"section"`
	Body            string `json:"body"`
}

// Tool is the get_operating_context definition. It is a new value on every
// call, so the caller may change it.
func (s *Source) Tool() *mcp.Tool {
	f := false
	return &mcp.Tool{
		Name:  ToolName,
		Title: "Operating context",
		Description: "Returns the operator's operating context: revision, instructions summary, " +
			"project id registry, [defaults] used to resolve \"@auto\", and doctrine section names. " +
			"Pass section to read one doctrine section in full.",
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    true,
			IdempotentHint:  true,
			DestructiveHint: &f,
			OpenWorldHint:   &f,
		},
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"section": map[string]any{
					"type":        "string",
					"description": "A doctrine section name, as listed in doctrine_sections.",
				},
			},
			"additionalProperties": false,
		},
	}
}

// CallTool answers get_operating_context. Caller mistakes (bad arguments,
// an unknown section, the feature not active) are tool errors the model can
// read; the error return is for a result that cannot be encoded.
func (s *Source) CallTool(args json.RawMessage) (*mcp.CallToolResult, error) {
	f := s.active()
	if f == nil {
		return toolError(fmt.Sprintf("%s: the operating context is not active (%s)", ToolName, s.Status().State)), nil
	}
	var in struct {
		Section *string `json:"section"`
	}
	if t := bytes.TrimSpace(args); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return toolError(fmt.Sprintf("%s: bad arguments: %v; valid: {} or {\"section\": NAME}", ToolName, err)), nil
		}
	}
	if in.Section == nil {
		defaults := f.Defaults
		if defaults == nil {
			defaults = map[string]string{}
		}
		var ids []string
		if f.hasRegistry {
			ids = append([]string{}, f.Registry.ProjectIDs...)
		}
		return structured(Preview{
			ContextRevision:     f.ContextRevision,
			InstructionsSummary: f.Instructions.Summary,
			Registry:            PreviewRegistry{ProjectIDs: ids, Enforce: f.Registry.Enforce, Argument: f.Registry.Argument},
			Defaults:            defaults,
			DoctrineSections:    f.SectionNames(),
		})
	}
	for _, d := range f.Doctrine {
		if d.Name == *in.Section {
			return structured(Section{ContextRevision: f.ContextRevision, Section: d.Name, Body: d.Body})
		}
	}
	valid := "none (the file has no [[doctrine]] sections)"
	if names := f.SectionNames(); len(names) > 0 {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = fmt.Sprintf("%q", n)
		}
		valid = strings.Join(quoted, ", ")
	}
	return toolError(fmt.Sprintf("%s: unknown section %q; valid sections: %s", ToolName, *in.Section, valid)), nil
}

func structured(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s result: %w", ToolName, err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
