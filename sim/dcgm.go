package sim

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DCGMNode is the Hostname the simulated dcgm-exporter reports: the fleet
// runs on one (simulated) node.
const DCGMNode = "sim-node"

// DCGMNamespace is the namespace of the pods the exporter maps the GPUs to;
// a replica's pod is its name.
const DCGMNamespace = "sim"

// DCGMExposition renders the fleet's simulated GPUs as dcgm-exporter 4.x
// does with Kubernetes pod mapping (NOTES.md §1–§3): one line per field
// and device, MiB for framebuffer, % for utilization, the clock-event bit
// mask under its DCGM 4 name, the last XID (0: none).
func (f *Fleet) DCGMExposition() []byte {
	snap := f.GPUs().Sample(context.Background())
	holder := map[int]string{}
	for _, r := range f.replicas {
		for _, i := range r.GPUIndexes() {
			holder[i] = r.Name()
		}
	}
	type metric struct {
		name, typ, help string
		v               func(i int) float64
	}
	const mib = 1 << 20
	ms := []metric{
		{"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", func(i int) float64 { return snap.GPUs[i].SMClockMHz }},
		{"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", func(i int) float64 { return snap.GPUs[i].MemClockMHz }},
		{"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", func(i int) float64 { return snap.GPUs[i].TempC }},
		{"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", func(i int) float64 { return snap.GPUs[i].PowerW }},
		{"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", func(i int) float64 { return snap.GPUs[i].UtilGPU }},
		{"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", func(i int) float64 { return snap.GPUs[i].UtilMem }},
		{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", func(i int) float64 {
			return math.Floor((snap.GPUs[i].MemTotal - snap.GPUs[i].MemUsed) / mib)
		}},
		{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", func(i int) float64 { return math.Floor(snap.GPUs[i].MemUsed / mib) }},
		{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask).", func(i int) float64 { return float64(snap.GPUs[i].ClockEventBits) }},
		{"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", func(int) float64 { return 0 }},
		{"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", func(i int) float64 { return snap.GPUs[i].PCIeTxBps }},
		{"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", func(i int) float64 { return snap.GPUs[i].PCIeRxBps }},
	}
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", m.name, m.help, m.name, m.typ)
		for i, d := range snap.GPUs {
			v := m.v(i)
			if math.IsNaN(v) {
				continue // DCGM leaves blank fields out
			}
			fmt.Fprintf(&b, `%s{gpu="%d",UUID="%s",pci_bus_id="%s",device="nvidia%d",modelName="%s",Hostname="%s"`,
				m.name, d.Index, d.UUID, d.PCIBusID, d.Index, d.Name, DCGMNode)
			if pod, ok := holder[i]; ok {
				fmt.Fprintf(&b, `,container="vllm",namespace="%s",pod="%s"`, DCGMNamespace, pod)
			}
			b.WriteString("} ")
			if v == math.Trunc(v) && math.Abs(v) < 1e15 {
				b.WriteString(strconv.FormatInt(int64(v), 10))
			} else {
				b.WriteString(strconv.FormatFloat(v, 'f', 6, 64))
			}
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// DCGMServer serves DCGMExposition on a loopback port, as dcgm-exporter
// serves :9400/metrics.
type DCGMServer struct {
	srv *http.Server
	URL string
}

// ServeDCGM listens on addr (loopback only). The fleet must be served
// (Serve) so that it follows the clock.
func ServeDCGM(f *Fleet, addr string) (*DCGMServer, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--dcgm-listen %q: %v", addr, err)
	}
	if host, err = CheckLoopback(host); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(f.DCGMExposition())
	})
	s := &DCGMServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, URL: "http://" + ln.Addr().String() + "/metrics"}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *DCGMServer) Close() error { return s.srv.Close() }
