package diagnose

import (
	"math"
	"reflect"
	"testing"
)

// Every number of Stats is a row of StatFields (so the report, the screen
// and UnknownStats know it), each row's accessor reaches its own field, and
// keys are unique within their object.
func TestStatFieldsCoverStats(t *testing.T) {
	var s Stats
	base := reflect.ValueOf(&s).Elem()
	at := map[uintptr]string{}
	keys := map[string]bool{}
	for i, fd := range StatFields {
		off := reflect.ValueOf(fd.At(&s)).Pointer() - base.Addr().Pointer()
		if prev, ok := at[off]; ok {
			t.Errorf("row %d (%s) reaches the field row %s does", i, fd.JSON, prev)
		}
		at[off] = fd.JSON
		if fd.Group != "" {
			if keys[fd.Group+"."+fd.JSON] || fd.JSON == "" {
				t.Errorf("row %d: key %q in %s is empty or repeated", i, fd.JSON, fd.Group)
			}
			keys[fd.Group+"."+fd.JSON] = true
		}
	}
	for i := range base.NumField() {
		f := base.Type().Field(i)
		if f.Type.Kind() != reflect.Float64 {
			continue
		}
		if _, ok := at[f.Offset]; !ok {
			t.Errorf("Stats.%s is a number with no row in StatFields", f.Name)
		}
	}
	u := UnknownStats()
	for _, fd := range StatFields {
		if v := *fd.At(&u); !math.IsNaN(v) {
			t.Errorf("UnknownStats: %s is %v, want unknown", fd.JSON, v)
		}
	}
}
