package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	for _, c := range []struct {
		profile string
		offset  int
	}{{"core", 0}, {"core", 20}, {"full", 1 << 40}, {"", 3}, {"a/b ü", 7}} {
		got, err := decodeCursor(key, c.profile, EncodeCursor(key, c.profile, c.offset))
		if err != nil || got != c.offset {
			t.Errorf("%+v: decoded %d, %v", c, got, err)
		}
	}
	if got, err := decodeCursor(key, "core", StartCursor); err != nil || got != 0 {
		t.Errorf("StartCursor: %d, %v; want offset 0", got, err)
	}
}

// encodeRaw encodes a cursor struct as the gateway would, without a MAC
// computed from its fields, to build tampered cursors.
func encodeRaw(t *testing.T, c cursor) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestCursorRejected(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	other := bytes.Repeat([]byte{2}, 32)
	mac := cursorMAC(key, "core", 3)
	cases := []struct {
		name, cursor, want string
	}{
		{"not base64url", "***", "not base64url"},
		{"padded base64", base64.URLEncoding.EncodeToString([]byte(`{"v":1}x`)), "not base64url"},
		{"not json", base64.RawURLEncoding.EncodeToString([]byte("hello")), "undecodable"},
		{"other version", encodeRaw(t, cursor{V: 2, Profile: "core", Offset: 3, MAC: mac}), "version 2"},
		{"offset changed", encodeRaw(t, cursor{V: 1, Profile: "core", Offset: 4, MAC: mac}), "failed verification"},
		{"profile changed", encodeRaw(t, cursor{V: 1, Profile: "full", Offset: 3, MAC: mac}), "failed verification"},
		{"no mac", encodeRaw(t, cursor{V: 1, Profile: "core", Offset: 3}), "failed verification"},
		{"other key", EncodeCursor(other, "core", 3), "failed verification"},
		{"other profile", EncodeCursor(key, "full", 3), `issued for profile "full"`},
		{"negative offset", EncodeCursor(key, "core", -1), "negative"},
	}
	for _, c := range cases {
		_, err := decodeCursor(key, "core", c.cursor)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), `"start"`) && c.name != "negative offset" {
			t.Errorf("%s: %v does not say how to start paging", c.name, err)
		}
	}
}

func TestCursorMACSeparatesFields(t *testing.T) {
	key := []byte("k")
	// Without length prefixes ("ab", 1) and ("a", ...) could collide.
	if bytes.Equal(cursorMAC(key, "a", 0x62), cursorMAC(key, "ab", 0)) {
		t.Error("MACs of different (profile, offset) pairs are equal")
	}
}
