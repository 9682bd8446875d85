package main

import (
	"context"
	"io"
	"log/slog"
	"time"
)

func replayTUI(ctx context.Context, p *player, at time.Time, speed int, theme string, stdout, stderr io.Writer, logger *slog.Logger) int {
	return 0
}
