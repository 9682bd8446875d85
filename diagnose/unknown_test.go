package diagnose

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// UnknownStats leaves no number at zero (a field added to Stats later
// must be added to it too), and a target never polled shows it, with an
// unknown kind, never an engine with zeros.
func TestNeverPolledIsUnknown(t *testing.T) {
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Float64:
			if !math.IsNaN(v.Float()) {
				t.Errorf("%s is %v, want unknown (NaN)", path, v.Float())
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	}
	walk(reflect.ValueOf(UnknownStats()), "Stats")

	e := New(Config{Window: time.Minute, Interval: time.Second}, []TargetInfo{{Name: "never:8000"}})
	f := e.Frame(t0)
	ep := f.Endpoints[0]
	if ep.Kind != sources.KindUnknown || ep.Kind.String() != "unknown" {
		t.Errorf("kind %v", ep.Kind)
	}
	walk(reflect.ValueOf(ep.Stats), "never-polled Stats")
}
