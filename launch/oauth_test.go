package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeOAuth(t *testing.T) {
	tests := []struct {
		name, oauth string
		want        *OAuth
	}{
		{"discover everything", `{}`, &OAuth{}},
		{"pre-registered", `{"client_id": "toolprof", "client_secret": "${SECRET}", "scopes": ["read", "write"], "redirect_port": 8765}`,
			&OAuth{ClientID: "toolprof", ClientSecret: "${SECRET}", Scopes: []string{"read", "write"}, RedirectPort: 8765}},
		{"client metadata document", `{"client_metadata_url": "https://toolprof.example/client.json"}`,
			&OAuth{ClientMetadataURL: "https://toolprof.example/client.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servers, err := Decode("pack.json", []byte(`{"mcpServers": {"remote": {"url": "https://h/mcp", "oauth": `+tt.oauth+`}}}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := servers[0].OAuth; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("OAuth = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeOAuthStrict(t *testing.T) {
	tests := []struct {
		name, data string
		want       DecodeError // Msg compared by prefix
	}{
		{"unknown key", "{\"mcpServers\": {\"s\": {\"url\": \"https://h\", \"oauth\": {\n\"client\": \"x\"}}}}",
			DecodeError{Line: 2, Server: "s", Key: "oauth.client", Msg: "unknown key; valid keys: client_id"}},
		{"not an object", `{"mcpServers": {"s": {"url": "https://h", "oauth": true}}}`,
			DecodeError{Line: 1, Server: "s", Msg: `"oauth" must be a JSON object`}},
		{"port out of range", "{\"mcpServers\": {\"s\": {\"url\": \"https://h\", \"oauth\": {\n\"redirect_port\": 70000}}}}",
			DecodeError{Line: 2, Server: "s", Key: "oauth.redirect_port", Msg: "want an integer port from 1 to 65535, got 70000"}},
		{"port not an integer", `{"mcpServers": {"s": {"url": "https://h", "oauth": {"redirect_port": "80"}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "oauth.redirect_port", Msg: "want an integer port from 1 to 65535, got a string"}},
		{"scopes not strings", `{"mcpServers": {"s": {"url": "https://h", "oauth": {"scopes": "read write"}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "oauth.scopes", Msg: "want an array of strings, got a string"}},
		{"scope with space", `{"mcpServers": {"s": {"url": "https://h", "oauth": {"scopes": ["read write"]}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "oauth.scopes", Msg: `invalid scope "read write"`}},
		{"secret without id", `{"mcpServers": {"s": {"url": "https://h", "oauth": {"client_secret": "${S}"}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "oauth.client_secret", Msg: "needs oauth.client_id"}},
		{"metadata url not https", `{"mcpServers": {"s": {"url": "https://h", "oauth": {"client_metadata_url": "http://h/c.json"}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "oauth.client_metadata_url", Msg: "want an https URL with a path"}},
		{"stdio server", "{\"mcpServers\": {\"s\": {\"command\": \"x\",\n \"oauth\": {}}}}",
			DecodeError{Line: 2, Server: "s", Key: "oauth", Msg: "not valid for a stdio server"}},
		{"with an Authorization header", "{\"mcpServers\": {\"s\": {\"url\": \"https://h\", \"oauth\": {},\n \"headers\": {\"authorization\": \"${T}\"}}}}",
			DecodeError{Line: 2, Server: "s", Key: "headers", Msg: `an "Authorization" header and "oauth" contradict each other`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("pack.json", []byte(tt.data))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a DecodeError", err)
			}
			if de.File != "pack.json" || de.Line != tt.want.Line || de.Server != tt.want.Server ||
				de.Key != tt.want.Key || !strings.HasPrefix(de.Msg, tt.want.Msg) {
				t.Errorf("err = %+v\nwant %+v", *de, tt.want)
			}
		})
	}
}

// The client secret is a secret whether it came from a variable or was
// typed into the file: redacted when printed, scrubbed from messages.
func TestOAuthClientSecretRedacted(t *testing.T) {
	const secret = "s3cr3t-client-value"
	for _, tt := range []struct {
		name, written, wantPrinted string
	}{
		{"from a variable", "${CLIENT_SECRET}", "${CLIENT_SECRET}"},
		{"literal", secret, Redaction},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := fmt.Sprintf(`{"mcpServers": {"remote": {"url": "https://h/mcp", "oauth": {"client_id": "${CLIENT_ID}", "client_secret": %q}}}}`, tt.written)
			servers, err := Decode("pack.json", []byte(data))
			if err != nil {
				t.Fatal(err)
			}
			doc := Merge(servers, nil)
			r, err := doc.Resolve(lookupFrom(map[string]string{"CLIENT_ID": "toolprof-id", "CLIENT_SECRET": secret}))
			if err != nil {
				t.Fatal(err)
			}
			rs := r.Servers[0]
			if rs.OAuth == nil || rs.OAuth.ClientID != "toolprof-id" || rs.OAuth.ClientSecret != secret {
				t.Fatalf("resolved OAuth = %+v", rs.OAuth)
			}
			b, err := json.Marshal(r.Redacted())
			if err != nil {
				t.Fatal(err)
			}
			printed := string(b) + rs.String() + fmt.Sprintf("%v %#v", r, rs)
			if strings.Contains(printed, secret) {
				t.Errorf("printed document holds the secret: %s", printed)
			}
			if got := r.Redacted().Servers[0].OAuth.ClientSecret; got != tt.wantPrinted {
				t.Errorf("printed client_secret = %q, want %q", got, tt.wantPrinted)
			}
			if got := rs.Scrub("token endpoint said: bad secret " + secret); strings.Contains(got, secret) {
				t.Errorf("Scrub left the secret: %q", got)
			}
		})
	}
}

func TestOAuthUnsetVariable(t *testing.T) {
	servers, err := Decode("pack.json", []byte(`{"mcpServers": {"remote": {"url": "https://h/mcp", "oauth": {"client_id": "x", "client_secret": "${NOPE}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := Merge(servers, nil)
	_, err = doc.Resolve(lookupFrom(nil))
	if err == nil || !strings.Contains(err.Error(), "oauth.client_secret: variable ${NOPE} is not set") {
		t.Fatalf("err = %v, want naming oauth.client_secret and ${NOPE}", err)
	}
}
