package upstream

import "testing"

// TestBrowsable: only an https authorization URL, or http on a loopback
// host, is handed to xdg-open.
func TestBrowsable(t *testing.T) {
	for _, c := range []struct {
		url  string
		want bool
	}{
		{"https://auth.example.com/authorize?client_id=x", true},
		{"http://127.0.0.1:8123/authorize", true},
		{"http://[::1]:8123/authorize", true},
		{"http://localhost/authorize", true},
		{"http://auth.example.com/authorize", false},
		{"file:///etc/passwd", false},
		{"javascript:alert(1)", false},
		{"--help", false},
		{"x-custom://open", false},
		{"https:///no-host", false},
		{"", false},
	} {
		if got := browsable(c.url); got != c.want {
			t.Errorf("browsable(%q) = %v, want %v", c.url, got, c.want)
		}
	}
}
