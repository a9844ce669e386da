package jsonrpcwire

import (
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Body is a streamable HTTP POST body decoded once for everything that
// reads it before the SDK does: the server's checks (ids, the session cap,
// the disconnect watcher) and the gateway's (the protocol version header,
// the fast path). Every member is read as the SDK reads it, so no check
// sees another id, method or version than the SDK serves.
type Body struct {
	Data  []byte // the bytes decoded; the slices below point into it
	Batch bool   // a JSON array
	// Odd: a batch member is neither an object nor null (the SDK refuses
	// the batch), and Msgs is empty.
	Odd bool
	// Msgs is the message, or the batch's members.
	Msgs []BodyMessage
	// Plain is the message when DecodeValid reads it (the SDK then reads
	// it the same way), nil otherwise and for a batch.
	Plain jsonrpc.Message
	// Version is the protocol version in the message's params._meta, ""
	// when it names none (and for a batch); a value not a string is kept
	// as its JSON text, which no header equals.
	Version string
}

// BodyMessage is what the checks read of a message: its id and method as
// JSON text (nil: absent).
type BodyMessage struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
}

// MethodName is m's method when it is absent or null ("") or a string;
// ok is false for another JSON value.
func (m BodyMessage) MethodName() (name string, ok bool) {
	if len(m.Method) == 0 || m.Method[0] == 'n' {
		return "", true
	}
	if m.Method[0] != '"' {
		return "", false
	}
	return name, json.Unmarshal(m.Method, &name) == nil
}

// ID is the id of a single message, nil for a batch.
func (b *Body) ID() json.RawMessage {
	if b.Batch || len(b.Msgs) != 1 {
		return nil
	}
	return b.Msgs[0].ID
}

// DecodeBody decodes data, one valid JSON object or array with white
// space around it at most (the caller has checked), into a Body. The
// error is the SDK decoder's refusal of a message object; a batch whose
// members it cannot read is Odd instead.
func DecodeBody(data []byte) (*Body, error) {
	i := skipSpace(data, 0)
	if i == len(data) || (data[i] != '{' && data[i] != '[') {
		return nil, errors.New("the body is not a JSON object or array")
	}
	b := &Body{Data: data}
	if data[i] == '[' {
		b.Batch = true
		if err := UnmarshalAsSDK(data, &b.Msgs); err != nil {
			b.Odd, b.Msgs = true, nil // valid JSON: a member is not an object
		}
		return b, nil
	}
	var params json.RawMessage
	if msg, members, ok := decodeValid(data); ok {
		b.Plain = msg
		b.Msgs = []BodyMessage{{ID: members[1], Method: members[2]}}
		if _, isReq := msg.(*jsonrpc.Request); isReq {
			params = members[3]
		}
	} else {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method json.RawMessage `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := UnmarshalAsSDK(data, &m); err != nil {
			return nil, err
		}
		b.Msgs = []BodyMessage{{ID: m.ID, Method: m.Method}}
		params = m.Params
	}
	b.Version = metaVersion(params)
	return b, nil
}

// metaVersion is the protocol version in params._meta, params being valid
// JSON or nil. The member is read as a struct field, which the SDK's
// decoder matches as it matches the key of the map it reads _meta into
// (exactly, escapes undone, the last of several), without building the
// map.
func metaVersion(params json.RawMessage) string {
	var p struct {
		Meta *struct {
			Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if len(params) == 0 || UnmarshalAsSDK(params, &p) != nil || p.Meta == nil || p.Meta.Version == nil {
		return ""
	}
	var version string
	if json.Unmarshal(p.Meta.Version, &version) != nil {
		return string(p.Meta.Version) // not a string: never equal to a header
	}
	return version
}
