package sources

import "fmt"

// Version is a vLLM release number. The zero Version means "unknown / unbounded".
type Version struct{ Major, Minor, Patch int }

// V builds a Version.
func V(major, minor, patch int) Version { return Version{major, minor, patch} }

// IsZero reports whether v is the unknown version.
func (v Version) IsZero() bool { return v == Version{} }

// Less reports whether v sorts before w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

func (v Version) String() string {
	if v.Patch == 99 { // an upper bound "before the next minor"
		return fmt.Sprintf("%d.%d.x", v.Major, v.Minor)
	}
	if v.Patch == 0 {
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Gen is the vLLM engine generation: V0 (LLMEngine) or V1 (EngineCore).
type Gen uint8

const (
	GenUnknown Gen = iota
	GenV0
	GenV1
)

func (g Gen) String() string {
	switch g {
	case GenV0:
		return "V0"
	case GenV1:
		return "V1"
	}
	return "V?"
}

// VersionRange is what a scrape says about the vLLM release behind it:
// the engine generation and the releases whose metric set fits what was seen.
type VersionRange struct {
	// Server is the engine whose families the scrape carries, decided by
	// the count of present families of each (never by a HELP text). The
	// rest describes vLLM releases only.
	Server   Server
	Gen      Gen
	Min, Max Version // zero: unbounded on that side
}

func (r VersionRange) String() string {
	if r.Server != ServerVLLM {
		return r.Server.String()
	}
	g := r.Gen.String()
	switch {
	case r.Min.IsZero() && r.Max.IsZero():
		if r.Gen == GenUnknown {
			return "unknown"
		}
		return g
	case r.Max.IsZero():
		return fmt.Sprintf("%s ≥%s", g, r.Min)
	case r.Min.IsZero():
		return fmt.Sprintf("%s ≤%s", g, r.Max)
	case r.Min == r.Max:
		return fmt.Sprintf("%s %s", g, r.Min)
	}
	return fmt.Sprintf("%s %s–%s", g, r.Min, r.Max)
}

// Contains reports whether release v fits the range.
func (r VersionRange) Contains(v Version) bool {
	if !r.Min.IsZero() && v.Less(r.Min) {
		return false
	}
	if !r.Max.IsZero() && r.Max.Less(v) {
		return false
	}
	return true
}

// AtLeast reports whether every release in the range is ≥ v (so a feature that
// arrived in v is certainly there).
func (r VersionRange) AtLeast(v Version) bool { return !r.Min.IsZero() && !r.Min.Less(v) }

// Below reports whether every release in the range is < v.
func (r VersionRange) Below(v Version) bool { return !r.Max.IsZero() && r.Max.Less(v) }
