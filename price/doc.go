// Package price says what a tool profile costs the model: the tokens of the
// tool definitions and instructions a client sends with every request, and
// what a session of several requests pays for them with prompt caching.
//
// It is a leaf: it imports no other toolprof package, so the serving side
// (cmd/server's handshake budget) and the analysis side (bench, derive,
// groups) price with the same code.
//
// # Two measures
//
// The wire measure is the MCP exchange as it travels (package exchange):
// every byte of initialize and tools/list, titles, annotations, _meta and icons
// included. The model measure is what a client forwards to the model, per
// client family:
//
//   - anthropic (the Messages API): the tools array, each tool as
//     {"name":N,"description":D,"input_schema":S}, then the instructions as
//     one system text block {"type":"text","text":I}.
//   - openai (the Responses API): the tools array, each tool as
//     {"type":"function","name":N,"description":D,"parameters":S}, then the
//     instructions as the JSON string of the "instructions" field.
//
// Exactly: the tools array is compact JSON without HTML escaping, keys in
// the order above, "description" left out when empty, S the tool's input
// schema as served (compacted, its key order kept; {"type":"object"} when
// the tool has none). The instructions part is absent when there are no
// instructions. A measure's tokens are the tokens of the tools array plus
// those of the instructions part, counted apart. Titles, annotations,
// output schemas, _meta and icons are not sent to the model and are not
// counted.
//
// # Tokenizers
//
// o200k_base is the tokenizer of OpenAI's current models (GPT-4o, GPT-4.1,
// the o-series, GPT-5), so the openai figures in o200k_base are the counts
// those models see, short of the few tokens each API adds around the tools.
// Anthropic publishes no offline tokenizer for Claude models; the anthropic
// figures are counted with the same tiktoken vocabularies and are an
// approximation of what Claude counts, good for comparing profiles with one
// another rather than for an absolute bill.
//
// # Sessions and prompt caching
//
// A session is a run of model requests (turns). Tools come first in the
// prompt, so a provider's prompt cache holds them: the first turn writes
// the prefix (CacheModel.Write times its tokens, 1.25 by default), later
// turns read it (CacheModel.Read, 0.1), and any change of the listed tools
// writes it again from that turn on. SessionCost prices one session from
// the prefix listed at each turn.
package price
