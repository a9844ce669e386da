package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/otelmcp"
)

// otelShutdown bounds the flush at exit, so that a collector that is down
// cannot hold the process.
const otelShutdown = 5 * time.Second

// startOTel starts an OTLP exporter when export is on (--otel, or an OTLP
// endpoint in the environment), before the upstreams so that their
// requests are traced; nil when off. close flushes it.
func startOTel(ctx context.Context, c *config, logger *slog.Logger) (_ *otelmcp.Exporter, close func(stderr io.Writer), err error) {
	if c.health || !otelmcp.Enabled(c.otel, os.Getenv) {
		return nil, func(io.Writer) {}, nil
	}
	exp, err := otelmcp.New(ctx, otelmcp.Config{ServiceName: version.Name, ServiceVersion: version.Version, Getenv: os.Getenv, Logger: logger})
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("--otel: %w", err)}
	}
	return exp, func(stderr io.Writer) {
		sctx, cancel := context.WithTimeout(context.Background(), otelShutdown)
		defer cancel()
		if err := exp.Shutdown(sctx); err != nil {
			h := exp.Health()
			fmt.Fprintf(stderr, "server: otel: flush at exit: %v (%d spans exported, %d dropped, %d failed)\n", err, h.Exported, h.Dropped, h.Failed)
		}
	}, nil
}
