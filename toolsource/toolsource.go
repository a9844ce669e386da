// Package toolsource opens the tools profiler prices, records or serves:
// a recorded catalog (served by the gateway's catalog upstream), the
// servers of a launch document started here, or one command's server.
//
// A Source's Upstream is the upstream itself, not a wrapper, so that a
// gateway serving it sees everything it implements (prompts, resources,
// raw definitions, instructions). A gateway made over it owns it: the
// gateway's Close closes it, and ClosedBy hands that result to the
// Source's own Close.
package toolsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/upstream"
)

// Spec names a source: exactly one of Catalog, Launch (with Persona, when
// given) or Command.
type Spec struct {
	Catalog string   // a recorded tools/list catalog file
	Launch  string   // a launch document (.mcp.json)
	Persona string   // persona merged into the launch document
	Command []string // a stdio server's command and arguments
}

// Source is an opened source of tools.
type Source struct {
	Upstream gateway.Upstream
	Desc     string // what was opened, for reports
	close    func() error
	// resolved is the launch document the servers were started from, its
	// values from the environment; nil for a catalog or a command.
	resolved *launch.Resolved
}

// Close closes the source (stops the servers started).
func (s *Source) Close() error { return s.close() }

// ClosedBy records that a gateway serving the source closed it, with
// err: Close then only reports err.
func (s *Source) ClosedBy(err error) { s.close = func() error { return err } }

// CloseInto closes the source, setting *err to the failure when *err is
// still nil: for a deferred close in a function with a named error result.
func (s *Source) CloseInto(err *error) {
	if cerr := s.close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close %s: %w", s.Desc, cerr)
	}
}

// Open starts or loads the source. The caller closes it. Started servers
// copy their stderr into stderr from their own goroutines: it must be
// safe for concurrent writes when the caller writes to it too.
func Open(ctx context.Context, spec Spec, stderr io.Writer) (*Source, error) {
	switch {
	case spec.Catalog != "":
		cat, err := catalog.Load(spec.Catalog)
		if err != nil {
			return nil, err
		}
		hash, err := cat.Hash()
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", spec.Catalog, err)
		}
		return &Source{
			Upstream: gateway.NewCatalogUpstream(cat),
			Desc:     fmt.Sprintf("catalog %s (%d tools, %s)", filepath.ToSlash(spec.Catalog), len(cat.Tools), hash),
			close:    func() error { return nil },
		}, nil
	case spec.Launch != "":
		doc, err := launch.Load(spec.Launch, spec.Persona)
		if err != nil {
			return nil, err
		}
		if len(doc.Servers) == 0 {
			return nil, fmt.Errorf("--launch %s: %w", spec.Launch, launch.ErrNoServers)
		}
		resolved, err := doc.Resolve(os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", spec.Launch, err)
		}
		set, err := upstream.StartSet(ctx, resolved, upstream.SetOptions{
			RequireAll: true,
			Client:     upstream.Options{Stderr: stderr, ProtocolVersion: upstream.ProtocolVersion},
		})
		if err != nil {
			return nil, fmt.Errorf("launch %s: %w", spec.Launch, err)
		}
		return &Source{Upstream: set, Desc: "launch document " + filepath.ToSlash(spec.Launch), close: set.Close, resolved: resolved}, nil
	default:
		// One upstream.Client, as the gateway connects it (capabilities,
		// protocol version), not a Set: a plain upstream, served with its
		// tools and instructions, so its exchange prices as a recorded
		// catalog's does. The command was typed on the caller's command
		// line: it gets the whole environment.
		c := upstream.NewClient(launch.ResolvedServer{Name: "upstream", Transport: launch.Stdio, Command: spec.Command[0], Args: spec.Command[1:]},
			upstream.Options{Stderr: stderr, ProtocolVersion: upstream.ProtocolVersion, InheritEnv: environNames()})
		if err := c.Start(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("start upstream %q: %w", strings.Join(spec.Command, " "), err)
		}
		return &Source{Upstream: commandUpstream{c}, Desc: "upstream " + strings.Join(spec.Command, " "), close: c.Close}, nil
	}
}

// commandUpstream is the one server of a command, its instructions named
// as a gateway in front of one command names them.
type commandUpstream struct{ *upstream.Client }

func (u commandUpstream) Instructions() []catalog.ServerInstructions {
	text := u.Client.Instructions()
	if text == "" {
		return nil
	}
	return []catalog.ServerInstructions{{Server: gateway.ClientUpstreamName, Instructions: text}}
}

// environNames are the names of every variable in the environment.
func environNames() []string {
	names := []string{}
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			names = append(names, k)
		}
	}
	return names
}

// Catalog lists the source's tools as a catalog, with the servers' own
// definitions and instructions as the gateway serves them: a tool whose
// name the gateway refuses is left out, with a warning. A definition
// that cannot be kept raw is reported to warn and kept as parsed. A
// catalog in which a server repeats a value its launch entry took from
// the environment is refused (see echoedSecrets).
func (s *Source) Catalog(ctx context.Context, warn io.Writer) (*catalog.Catalog, error) {
	tools, err := s.Upstream.ListTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tools of %s: %w", s.Desc, err)
	}
	// A name the gateway would not serve is neither listed nor callable
	// there: recorded, it would be priced and derived from.
	tools, refused := gateway.ServableTools(s.Upstream, tools)
	for _, r := range refused {
		fmt.Fprintf(warn, "catalog: %s\n", r)
	}
	cat := &catalog.Catalog{Tools: tools}
	if ru, ok := s.Upstream.(gateway.RawToolsUpstream); ok {
		for _, t := range tools {
			if raw, ok := ru.RawTool(t.Name); ok {
				if err := cat.SetRawTool(t, raw); err != nil {
					fmt.Fprintf(warn, "catalog: %v; writing the tool as parsed\n", err)
				}
			}
		}
	}
	if iu, ok := s.Upstream.(gateway.InstructionsUpstream); ok {
		cat.Instructions = iu.Instructions() // served after the profile's, so bench prices them
	}
	if err := s.echoedSecrets(cat); err != nil {
		return nil, err
	}
	return cat, nil
}

// echoedSecrets fails when a tool definition or a server's instructions
// in cat hold, in any form a scrubber finds, a value of 8 bytes or more
// a launch entry took from the environment (ResolvedServer.Echoes): a
// catalog is meant to be committed, and a server that describes the
// endpoint or key it was given would put it there.
// The error names the server, the tools and the instructions, never the
// value.
func (s *Source) echoedSecrets(cat *catalog.Catalog) error {
	if s.resolved == nil {
		return nil
	}
	var errs []error
	for _, rs := range s.resolved.Servers {
		var where []string
		for _, t := range cat.Tools {
			def, ok := cat.RawTool(t.Name)
			if !ok {
				var err error
				if def, err = json.Marshal(t); err != nil {
					return fmt.Errorf("encode tool %q: %w", t.Name, err)
				}
			}
			if rs.Echoes(string(def)) {
				where = append(where, fmt.Sprintf("tool %q", t.Name))
			}
		}
		for _, in := range cat.Instructions {
			if rs.Echoes(in.Instructions) {
				where = append(where, fmt.Sprintf("the instructions of server %q", in.Server))
			}
		}
		if len(where) > 0 {
			errs = append(errs, fmt.Errorf("server %q (%s) repeats a value its entry takes from the environment (a ${VAR}) in %s; "+
				"the catalog is not written, as it is meant to be committed: record with a value that is no secret, or write one that is none literally instead of ${VAR}",
				rs.Name, rs.Template.Source, strings.Join(where, " and in ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("catalog of %s: %w", s.Desc, errors.Join(errs...))
	}
	return nil
}
