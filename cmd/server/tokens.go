package main

// The tokens file (--tokens-file): bearer tokens, stored as SHA-256
// hashes, each bound to a profile and a ceiling (package tokens). With
// --auth-token-file too, that token joins the file's as one bound to
// nothing: it is served the path's profile, as without a tokens file.
// The file is polled every tokensPoll; an edit that does not parse, or
// names a profile that cannot be served, keeps the last good tokens and is
// reported in the health output.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolprof/toolprof/tokens"
)

// tokensPoll is how often the tokens file is checked for an edit.
const tokensPoll = time.Second

// openTokens opens --tokens-file, merging the --auth-token-file token in
// (taking over its check). It returns nil without --tokens-file.
func openTokens(c *config, ref *gatewayRef) (*tokens.Source, error) {
	if c.tokensFile == "" {
		return nil, nil
	}
	if c.httpAddr == "" {
		return nil, usagef("--tokens-file %s: applies to --http only (a stdio client is the process that started the server)", c.tokensFile)
	}
	var extra []tokens.Entry
	if len(c.hard.token) > 0 {
		extra = append(extra, tokens.Entry{Name: "--auth-token-file", Hash: tokens.HashToken(string(c.hard.token))})
		c.hard.token = nil // checked with the file's, by the gateway
	}
	src, err := tokens.Open(c.tokensFile, checkTokens(ref), extra...)
	if err != nil {
		return nil, usagef("--tokens-file: %v", err)
	}
	return src, nil
}

// checkTokens validates each entry against the gateway's profiles, once
// the gateway exists (before, only the syntax is checked).
func checkTokens(ref *gatewayRef) func(*tokens.Set) error {
	return func(s *tokens.Set) error {
		g := ref.g.Load()
		if g == nil {
			return nil
		}
		for _, e := range s.Entries() {
			if err := g.CheckCredential(e); err != nil {
				key := e.Name
				if e.Line > 0 {
					key = "token"
					if e.Name != "" {
						key = fmt.Sprintf("token %q", e.Name)
					}
				}
				return &tokens.Error{File: s.File, Line: e.Line, Key: key, Msg: err.Error()}
			}
		}
		return nil
	}
}

// watchTokens reloads src on change until ctx is done, logging each edit
// not taken up.
func watchTokens(ctx context.Context, src *tokens.Source, logger *slog.Logger) {
	t := time.NewTicker(tokensPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := src.Refresh(); err != nil {
				logger.Warn("tokens file not reloaded; serving the tokens loaded before", "error", err)
			}
		}
	}
}

// checkTokensNow validates the tokens in force against g at start.
func checkTokensNow(src *tokens.Source, ref *gatewayRef) error {
	if src == nil {
		return nil
	}
	if err := checkTokens(ref)(src.Current()); err != nil {
		return usagef("--tokens-file: %v", err)
	}
	return nil
}
