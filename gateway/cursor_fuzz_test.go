package gateway

import (
	"strings"
	"testing"
)

// FuzzDecodeCursor: no string decodes to an offset unless it is the start
// cursor or one the gateway minted for that profile; decoding never panics,
// and a refusal says how to start again.
func FuzzDecodeCursor(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	otherKey := []byte("another key, another server 0000")
	f.Add(StartCursor, "core")
	f.Add(EncodeCursor(key, "core", 20), "core")
	f.Add(EncodeCursor(key, "full", 40), "core")
	f.Add(EncodeCursor(otherKey, "core", 20), "core")
	f.Add("eyJ2IjoxLCJwIjoiY29yZSIsIm8iOi0xLCJtIjpudWxsfQ", "core")
	f.Add("!!!", "core")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, s, profile string) {
		off, err := decodeCursor(key, profile, s)
		if err != nil {
			if !strings.Contains(err.Error(), StartCursor) && !strings.Contains(err.Error(), "negative") {
				t.Fatalf("refusal does not say how to start paging: %v", err)
			}
			return
		}
		if off < 0 {
			t.Fatalf("negative offset %d accepted", off)
		}
		if s == StartCursor {
			if off != 0 {
				t.Fatalf("start cursor gives offset %d", off)
			}
			return
		}
		// Accepted: the key is what authorised it, so another key refuses it.
		if _, err := decodeCursor(otherKey, profile, s); err == nil {
			t.Fatalf("cursor %q (offset %d, profile %q) accepted under two keys", s, off, profile)
		}
	})
}
