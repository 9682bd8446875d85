package main

import (
	"context"
	"io"
	"log/slog"
)

// runTUI is replaced by the terminal UI; until then a terminal gets the report.
func runTUI(ctx context.Context, o *options, stdout, stderr io.Writer, logger *slog.Logger) int {
	return runOnce(ctx, o, stdout, stderr, logger)
}
