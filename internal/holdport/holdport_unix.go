//go:build unix

// Package holdport binds a TCP port without listening on it: a client's
// connect is refused, as from a server that is down, and the kernel hands
// the port to no one else asking for port 0 meanwhile. The simulator holds
// a restarting replica's port so; tests hold a port that must refuse for
// their whole run.
package holdport

import (
	"net"
	"syscall"
)

// Hold binds addr's port (0: any free one) on addr's IP and returns the
// bound address and the function that releases it. The socket has
// SO_REUSEADDR, so it binds over the TIME_WAIT connections a server that
// just closed on that port left behind.
func Hold(addr *net.TCPAddr) (*net.TCPAddr, func(), error) {
	family, sa := syscall.AF_INET, syscall.Sockaddr(nil)
	if ip4 := addr.IP.To4(); ip4 != nil {
		a := &syscall.SockaddrInet4{Port: addr.Port}
		copy(a.Addr[:], ip4)
		sa = a
	} else {
		family = syscall.AF_INET6
		a := &syscall.SockaddrInet6{Port: addr.Port}
		copy(a.Addr[:], addr.IP.To16())
		sa = a
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return nil, nil, err
	}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, nil, err
	}
	got, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, nil, err
	}
	out := &net.TCPAddr{IP: addr.IP}
	switch a := got.(type) {
	case *syscall.SockaddrInet4:
		out.Port = a.Port
	case *syscall.SockaddrInet6:
		out.Port = a.Port
	}
	return out, func() { syscall.Close(fd) }, nil
}
