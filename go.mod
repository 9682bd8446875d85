module github.com/vtop-dev/vtop

go 1.26.8

require (
	github.com/NVIDIA/go-nvml v0.13.2-0
	github.com/mattn/go-runewidth v0.0.16
	github.com/prometheus/prometheus v0.315.0
	github.com/spf13/pflag v1.0.10
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grafana/regexp v0.0.0-20250905093917-f7b3be9d1853 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.71.0 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
