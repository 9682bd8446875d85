package sources

import "strings"

// FailKind is why a scrape failed, as far as the advice for it differs:
// a DNS typo, a refused port, a wrong path and an expired token each need
// a different first step.
type FailKind uint8

const (
	FailOther    FailKind = iota
	FailDNS               // the host name does not resolve
	FailRefused           // nothing listens on the port
	FailReset             // the connection dropped mid-answer
	FailNotFound          // HTTP 404: the server answers, not at this path
	FailHTML              // an HTML page: a UI, a login or another program
	FailTLS               // the certificate is not trusted
	FailAuth              // HTTP 401/403
	FailTimeout           // no answer within --timeout
	FailTooLarge          // the body is over --max-body
	FailHTTP              // another HTTP status
)

// Classify reads a scrape error as fetch words it (describeNetErr and
// the status and body checks above it); the phrases are fetch's own, so
// the two stay in this package together.
func Classify(msg string) FailKind {
	switch {
	case msg == "":
		return FailOther
	case strings.HasPrefix(msg, "DNS lookup of "):
		return FailDNS
	case strings.HasPrefix(msg, "connection refused"):
		return FailRefused
	case strings.HasPrefix(msg, "connection reset"):
		return FailReset
	case strings.HasPrefix(msg, "HTTP 404"):
		return FailNotFound
	case strings.HasPrefix(msg, "HTTP 401"), strings.HasPrefix(msg, "HTTP 403"):
		return FailAuth
	case strings.HasPrefix(msg, "HTTP "):
		return FailHTTP
	case strings.HasPrefix(msg, "served an HTML page"):
		return FailHTML
	case strings.HasPrefix(msg, "TLS certificate"), strings.Contains(msg, "tls: "), strings.Contains(msg, "x509: "):
		return FailTLS
	case strings.HasPrefix(msg, "timed out"):
		return FailTimeout
	case strings.HasPrefix(msg, "body larger than"):
		return FailTooLarge
	}
	return FailOther
}
