package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// StartCursor is the cursor a client sends to ask for the first page of
// tools/list. A tools/list request without a cursor gets every allowed tool in
// one response (what existing clients expect); a request with StartCursor gets
// the first --page-size tools and a nextCursor, and so on until the last page,
// which has none. An empty cursor cannot start paging: on the wire it is the
// same as no cursor.
const StartCursor = "start"

// cursorVersion is the version of the cursor's encoding.
const cursorVersion = 1

// cursor is what a nextCursor carries, as base64url (unpadded) JSON. The MAC
// binds the offset to the profile it was issued for, under a key only the
// gateway (or replicas sharing Options.CursorKey) knows, so a client cannot
// forge an offset or reuse a cursor from another profile.
type cursor struct {
	V       int    `json:"v"`
	Profile string `json:"p"`
	Offset  int    `json:"o"`
	MAC     []byte `json:"m"`
}

// EncodeCursor returns the cursor for offset in profile under key. The
// gateway uses it for nextCursor; replicas sharing a key can mint each
// other's cursors.
func EncodeCursor(key []byte, profile string, offset int) string {
	c := cursor{V: cursorVersion, Profile: profile, Offset: offset, MAC: cursorMAC(key, profile, offset)}
	b, err := json.Marshal(c)
	if err != nil { // a struct of strings, ints and bytes always marshals
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor returns the offset carried by s for profile, or an error
// saying why s is not a cursor this gateway issued for profile.
func decodeCursor(key []byte, profile, s string) (int, error) {
	if s == StartCursor {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, fmt.Errorf("cursor %q is not one this server issued (not base64url); start paging with cursor %q", truncate(s), StartCursor)
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return 0, fmt.Errorf("cursor %q is not one this server issued (undecodable); start paging with cursor %q", truncate(s), StartCursor)
	}
	if c.V != cursorVersion {
		return 0, fmt.Errorf("cursor version %d is not supported (want %d); start paging with cursor %q", c.V, cursorVersion, StartCursor)
	}
	if !hmac.Equal(c.MAC, cursorMAC(key, c.Profile, c.Offset)) {
		return 0, errors.New("cursor failed verification (forged, tampered with, or issued by another server); start paging with cursor \"" + StartCursor + "\"")
	}
	if c.Profile != profile {
		return 0, fmt.Errorf("cursor was issued for profile %q, but this session serves profile %q; start paging with cursor %q", c.Profile, profile, StartCursor)
	}
	if c.Offset < 0 {
		return 0, fmt.Errorf("cursor offset %d is negative", c.Offset)
	}
	return c.Offset, nil
}

// cursorMAC is HMAC-SHA256 over the profile and offset, each length-prefixed
// so that no two (profile, offset) pairs share an input.
func cursorMAC(key []byte, profile string, offset int) []byte {
	m := hmac.New(sha256.New, key)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(profile)))
	m.Write(n[:])
	m.Write([]byte(profile))
	binary.BigEndian.PutUint64(n[:], uint64(offset))
	m.Write(n[:])
	return m.Sum(nil)
}

// truncate shortens s for an error message.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
