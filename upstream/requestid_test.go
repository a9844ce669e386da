package upstream

import (
	"net/http"
	"strings"
	"testing"
)

// The id of a POSTed call is read off the body's head, framed as the SDK
// frames it; answers and notifications, which are no calls, have none.
func TestCallIDOfPostBody(t *testing.T) {
	long := strings.Repeat("x", 2*idHead)
	for _, tt := range []struct {
		name, body string
		want       any // the id's Raw value
		ok         bool
	}{
		{"number id", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, int64(7), true},
		{"string id", `{"jsonrpc":"2.0","id":"a-1","method":"ping"}`, "a-1", true},
		{"long params", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"t":"` + long + `"}}}`, int64(9), true},
		{"answer to a server's request", `{"jsonrpc":"2.0","id":3,"result":{}}`, nil, false},
		{"answer whose result names a method", `{"jsonrpc":"2.0","id":3,"result":{"x":1,"method":"m"}}`, nil, false},
		{"answer with a string id", `{"jsonrpc":"2.0","id":"s","result":{"a":"b","method":"m"}}`, nil, false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, false},
		{"id past the head", `{"jsonrpc":"2.0","method":"tools/call","params":{"t":"` + long + `"},"id":4}`, nil, false},
		{"not JSON", `hello`, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://upstream.invalid/mcp", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			id, ok := callID(req)
			if ok != tt.ok || id.Raw() != tt.want {
				t.Errorf("callID = %v, %v; want %v, %v", id.Raw(), ok, tt.want, tt.ok)
			}
		})
	}
}
