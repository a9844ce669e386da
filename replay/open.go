package replay

import (
	"context"
	"fmt"
	"io"

	"github.com/toolprof/toolprof/telemetry"
)

// TargetConfig names the server a replay drives: a running one (URL), a
// gateway started here over a launch document (Gateway.Launch) or a stdio
// server started per session (Command). Exactly one is given.
type TargetConfig struct {
	URL     string        // streamable HTTP endpoint of a running server
	Gateway GatewayConfig // with Launch: the gateway StartGateway starts
	Command []string      // program and arguments of a stdio server
	// Profile, when not "", is asked for in every session instead of the
	// one each trace line names.
	Profile string
	// Concurrency is how many sessions run at once: the HTTP targets keep
	// as many idle connections.
	Concurrency int
}

// OpenTarget returns the target cfg names and how to stop it: stop stops
// the gateway started for Gateway.Launch and does nothing for the others.
// An unknown Profile with Gateway.Launch is an *UnknownProfileError.
func OpenTarget(ctx context.Context, cfg TargetConfig, stderr io.Writer) (target Target, stop func() error, err error) {
	switch {
	case cfg.URL != "":
		return NewHTTPTarget(cfg.URL, cfg.Profile, cfg.Concurrency), func() error { return nil }, nil
	case cfg.Gateway.Launch != "":
		gw := cfg.Gateway
		gw.Profile = cfg.Profile
		endpoint, stop, err := StartGateway(ctx, gw, stderr)
		if err != nil {
			return nil, nil, err
		}
		return NewHTTPTarget(endpoint, cfg.Profile, cfg.Concurrency), stop, nil
	default:
		return CommandTarget{Command: cfg.Command, Profile: cfg.Profile}, func() error { return nil }, nil
	}
}

// ReadTrace reads the session trace at path to replay: malformed lines
// are reported on w and, with skipBad, left out (else an error), and every
// call's arguments must be a JSON object. Errors are prefixed "replay: ".
func ReadTrace(path string, skipBad bool, w io.Writer) ([]telemetry.TraceSession, error) {
	sessions, err := telemetry.ReadTraceFile(path, "replay", skipBad, w, "nothing replayed", "replay the rest")
	if err != nil {
		return nil, err
	}
	if err := CheckArguments(sessions, path); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return sessions, nil
}
