package holdport

import (
	"net"
	"strings"
	"testing"
)

// A held port refuses connections and cannot be listened on by a socket
// without SO_REUSEADDR; released, it can be listened on again.
func TestHold(t *testing.T) {
	addr, release, err := Hold(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if addr.Port == 0 {
		t.Fatal("no port bound")
	}
	if c, err := net.Dial("tcp", addr.String()); err == nil {
		c.Close()
		t.Fatalf("%s accepts while held", addr)
	} else if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	release()
	ln, err := net.Listen("tcp", addr.String())
	if err != nil {
		t.Fatalf("released %s: %v", addr, err)
	}
	ln.Close()
}
