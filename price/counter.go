package price

import (
	"fmt"
	"slices"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer names, as tiktoken spells them.
const (
	O200kBase  = "o200k_base"  // GPT-4o, GPT-4.1, o-series, GPT-5
	Cl100kBase = "cl100k_base" // GPT-4, GPT-3.5
)

// TokenizerNames returns the tokenizers a Counter runs, in report order.
func TokenizerNames() []string { return []string{O200kBase, Cl100kBase} }

// Counter counts tokens with every tokenizer in TokenizerNames. It is safe
// for concurrent use (the codecs hold no per-call state).
type Counter struct {
	codecs []tokenizer.Codec
}

// NewCounter loads the tokenizers. Their vocabularies are compiled into the
// binary, so this needs no network.
func NewCounter() (*Counter, error) { return NewCounterOf(TokenizerNames()...) }

// NewCounterOf loads only the named tokenizers (of TokenizerNames), for a
// caller that counts with those alone: loading a vocabulary builds a
// table of its every token. Count and the other methods then know only
// those.
func NewCounterOf(names ...string) (*Counter, error) {
	c := &Counter{}
	for _, name := range names {
		if !slices.Contains(TokenizerNames(), name) {
			return nil, fmt.Errorf("unknown tokenizer %q (want one of %v)", name, TokenizerNames())
		}
		codec, err := tokenizer.Get(tokenizer.Encoding(name))
		if err != nil {
			return nil, fmt.Errorf("load tokenizer %s: %w", name, err)
		}
		c.codecs = append(c.codecs, codec)
	}
	return c, nil
}

// Count returns the number of tokens in text for each tokenizer, keyed by
// tokenizer name. Special-token text such as "<|endoftext|>" is counted as
// the ordinary text it is.
func (c *Counter) Count(text string) (map[string]int, error) {
	out := make(map[string]int, len(c.codecs))
	for _, codec := range c.codecs {
		n, err := codec.Count(text)
		if err != nil {
			return nil, fmt.Errorf("count tokens with %s: %w", codec.GetName(), err)
		}
		out[codec.GetName()] = n
	}
	return out, nil
}

// CountWith returns the number of tokens in text under the named
// tokenizer alone.
func (c *Counter) CountWith(name, text string) (int, error) {
	for _, codec := range c.codecs {
		if codec.GetName() == name {
			n, err := codec.Count(text)
			if err != nil {
				return 0, fmt.Errorf("count tokens with %s: %w", name, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("unknown tokenizer %q (want one of %v)", name, TokenizerNames())
}

// Encode returns the token ids of text under the named tokenizer.
func (c *Counter) Encode(name, text string) ([]uint, error) {
	for _, codec := range c.codecs {
		if codec.GetName() == name {
			ids, _, err := codec.Encode(text)
			if err != nil {
				return nil, fmt.Errorf("encode with %s: %w", name, err)
			}
			return ids, nil
		}
	}
	return nil, fmt.Errorf("unknown tokenizer %q (want one of %v)", name, TokenizerNames())
}

// Decode returns the text of ids under the named tokenizer.
func (c *Counter) Decode(name string, ids []uint) (string, error) {
	for _, codec := range c.codecs {
		if codec.GetName() == name {
			s, err := codec.Decode(ids)
			if err != nil {
				return "", fmt.Errorf("decode with %s: %w", name, err)
			}
			return s, nil
		}
	}
	return "", fmt.Errorf("unknown tokenizer %q (want one of %v)", name, TokenizerNames())
}

// EstimateTokens is the bytes/4 rule of thumb. It is shown only as a labelled
// estimate: on JSON it is commonly 25-30% off the real count.
func EstimateTokens(bytes int) int { return (bytes + 3) / 4 }
