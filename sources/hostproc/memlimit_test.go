package hostproc

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory of real files stands in for /proc and /sys/fs/cgroup.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMemLimit(t *testing.T) {
	const meminfo = "MemTotal:       131072000 kB\nMemFree:         1000 kB\n"
	host := 131072000.0 * 1024
	cases := []struct {
		name  string
		files map[string]string
		want  float64
		from  string
	}{
		{"v2: the service's own memory.max", map[string]string{
			"proc/meminfo": meminfo, "proc/42/cgroup": "0::/system.slice/vllm.service\n",
			"cg/system.slice/vllm.service/memory.max": "34359738368\n", "cg/system.slice/memory.max": "max\n",
		}, 34359738368, "cgroup memory limit"},
		{"v2: unlimited itself, a parent's limit holds", map[string]string{
			"proc/meminfo": meminfo, "proc/42/cgroup": "0::/kubepods/pod1/ctr\n",
			"cg/kubepods/pod1/ctr/memory.max": "max\n", "cg/kubepods/pod1/memory.max": "17179869184\n",
			"cg/kubepods/memory.max": "68719476736\n",
		}, 17179869184, "cgroup memory limit"},
		{"v2: no limit anywhere: the host's MemTotal", map[string]string{
			"proc/meminfo": meminfo, "proc/42/cgroup": "0::/user.slice\n", "cg/user.slice/memory.max": "max\n",
		}, host, "host MemTotal"},
		{"v2: a limit above MemTotal is no limit", map[string]string{
			"proc/meminfo": meminfo, "proc/42/cgroup": "0::/big\n", "cg/big/memory.max": "999999999999999\n",
		}, host, "host MemTotal"},
		{"v1: memory.limit_in_bytes, 2⁶³-ish means none", map[string]string{
			"proc/meminfo": meminfo, "proc/42/cgroup": "12:cpu,cpuacct:/docker/abc\n9:memory:/docker/abc\n0::/\n",
			"cg/memory/docker/abc/memory.limit_in_bytes": "8589934592\n", "cg/memory/docker/memory.limit_in_bytes": "9223372036854771712\n",
		}, 8589934592, "cgroup memory limit"},
		{"no cgroup file: the host", map[string]string{"proc/meminfo": meminfo}, host, "host MemTotal"},
		{"nothing readable", map[string]string{"proc/42/cgroup": "0::/x\n"}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, c.files)
			got, from := MemLimit(filepath.Join(root, "proc"), filepath.Join(root, "cg"), 42)
			if got != c.want || from != c.from {
				t.Errorf("MemLimit = %v (%q), want %v (%q)", got, from, c.want, c.from)
			}
		})
	}
}
