package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// urlSecret holds a quote, a backslash and characters URLs escape.
const urlSecret = `tok"en\with space&more%41`

// encodings are the forms in which urlSecret could leak: as is,
// JSON-escaped, Go-quoted (once and twice), URL-escaped.
func encodings(v string) []string {
	j, _ := json.Marshal(v)
	jj, _ := json.Marshal(strconv.Quote(v))
	forms := []string{v, string(j[1 : len(j)-1]), strconv.Quote(v)[1:], string(jj[1 : len(jj)-1]),
		strconv.Quote(strconv.Quote(v))[1:], url.PathEscape(v), url.QueryEscape(v), (&url.URL{Path: v}).EscapedPath()}
	if u, err := url.PathUnescape(v); err == nil {
		forms = append(forms, u, url.PathEscape(u))
	}
	return forms
}

// TestHTTPUpstreamURLSecretNeverPrinted: a ${VAR} value with a quote, a
// backslash and characters URLs escape, in the URL of an HTTP upstream
// nothing listens on, appears in none of its encodings in stderr (every
// retry), /healthz, server --health, or the gateway's answer; the errors
// show the URL as written.
func TestHTTPUpstreamURLSecretNeverPrinted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // closed: every connection is refused
	tmpl := fmt.Sprintf("http://127.0.0.1:%d/mcp/${URL_SECRET}?key=${URL_SECRET}", port)
	file := writeLaunch(t, map[string]any{"r": map[string]any{"type": "http", "url": tmpl}})
	env := []string{"URL_SECRET=" + urlSecret}

	l := startLaunch(t, file, env)
	cs := l.connect(t, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "anything"})
	answer := fmt.Sprint(err)
	if err == nil {
		b, _ := json.Marshal(res)
		answer = string(b)
	}
	_, healthz := l.health(t)
	cs.Close()
	if err := l.stop(); err != nil {
		t.Fatal(err)
	}
	_, healthOut, healthErr := runServer(t, env, append(launchArgs(t, t.TempDir()), "--launch", file, "--health")...)

	outputs := map[string]string{"stderr": l.stderr.String(), "/healthz": healthz, "answer": answer, "--health": healthOut, "--health stderr": healthErr}
	for name, out := range outputs {
		for _, f := range encodings(urlSecret) {
			if strings.Contains(out, f) {
				t.Errorf("%s holds the secret as %q:\n%s", name, f, out)
			}
		}
	}
	if !strings.Contains(healthz, "/mcp/${URL_SECRET}") {
		t.Errorf("/healthz does not show the URL as written:\n%s", healthz)
	}
}
