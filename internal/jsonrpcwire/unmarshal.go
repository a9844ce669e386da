package jsonrpcwire

import segjson "github.com/segmentio/encoding/json"

// UnmarshalAsSDK decodes the first JSON value of data into v as the
// go-sdk's decoder does (its internal/json: segmentio/encoding/json with
// DontMatchCaseInsensitiveStructFields): a member matches a struct field
// only by its exact name, and of several members of one name the last
// wins. encoding/json matches names case-insensitively, so a member "ID",
// "Method" or "Params", which the SDK ignores, would be read for the
// field; whatever reads a message for a check or an answer the SDK's
// serving must agree with reads it here. Like the SDK's decoder it stops
// after the first value: bytes after it are not read.
func UnmarshalAsSDK(data []byte, v any) error {
	_, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	return err
}
