//go:build !unix

// Package holdport binds a TCP port without listening on it (unix only).
package holdport

import (
	"errors"
	"net"
)

// Hold is not available here: a port cannot be bound without listening.
func Hold(*net.TCPAddr) (*net.TCPAddr, func(), error) {
	return nil, nil, errors.New("holding a port without listening needs a unix socket API")
}
