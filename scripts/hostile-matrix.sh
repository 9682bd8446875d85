#!/usr/bin/env bash
# The hostile-input matrix: every test that reproduces a case of the
# hostile-input probes (issues 15 and 22: hostile /metrics bodies, values
# and label text; dcgm-exporter, Prometheus and file_sd answers; crafted
# recordings and config files; redirects with credentials; hung files and
# mounts; signals; bounds on targets, replicas, series, devices, lines,
# windows), run as one go test over the packages that hold them.
#
#   scripts/hostile-matrix.sh            # add -race etc. as arguments
set -euo pipefail
cd "$(dirname "$0")/.."
tests=(
  # the first probes' hostile bodies and text
  'Hostile' 'SanitizesEverything' 'NULLineStart' 'ValueRanges'
  # issue 22, items 1-16
  'RedirectDropsCredentials' 'ReplayHostileRecording' 'ConfigHostileNames'
  'DiscoveredShareSlots' 'DiscoveredOnePoller' 'PollSourceUpdate'
  'PrometheusBackfillRetries' 'FederationBounds' 'FederationFutureStamp' 'PrometheusFirstFrameAtOnce'
  'FileSDFailuresSaid' 'OnceFileSDFailureSaid' 'ScraperHungExporter' 'DeviceBound' 'MIGInstanceSanitized'
  'IntervalBound' 'CreateRefusesExisting' 'FileSDFIFOQuits' 'FileSDHungMount' 'HungMountFileSD'
  'E2EEverySignalRestores' 'ExportDamaged' 'E2EExportToTerminal' 'FlagBounds'
  # bounds and problems
  'HeaderBoundsRefused' 'WindowPastHistoryClamped' 'DiscoveryMaxTargets' 'ProblemsRecorded' 'ReplayShowsProblems'
)
re=$(IFS='|'; echo "${tests[*]}")
go test -count=1 "$@" -run "^Test.*($re)" ./...
