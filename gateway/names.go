package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// Bounds on what a client names that telemetry stores: a tool name no
// upstream offers, and the client's name and version from its handshake,
// are the client's own strings, stored with every call or session. A tool
// name an upstream offers is stored as is (the catalog bounds it).
const (
	maxUnknownToolName = 128 // bytes of a tool name no upstream offers
	maxClientField     = 256 // bytes of clientInfo.name, clientInfo.version, protocolVersion
)

// boundName returns s when it has at most max bytes. A longer s is cut to
// at most max bytes at a rune boundary and followed by "…" and 16 hex
// digits of the SHA-256 of the rest, so long names that differ after the
// cut stay apart in telemetry.
func boundName(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s[cut:]))
	return s[:cut] + "…" + hex.EncodeToString(sum[:8])
}
