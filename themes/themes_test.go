package themes

import (
	"reflect"
	"regexp"
	"testing"
)

// A color theme names every color; mono names none.
func TestPalettes(t *testing.T) {
	hex := regexp.MustCompile(`^#[0-9a-f]{6}$`)
	for _, th := range All() {
		v := reflect.ValueOf(th)
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Type.Kind() != reflect.String || f.Name == "Name" {
				continue
			}
			c := v.Field(i).String()
			if th.Color && !hex.MatchString(c) {
				t.Errorf("%s.%s = %q", th.Name, f.Name, c)
			}
			if !th.Color && c != "" {
				t.Errorf("mono has a color: %s = %q", f.Name, c)
			}
		}
	}
}

func TestByNameAndNext(t *testing.T) {
	for in, want := range map[string]string{"dark": "dark", " Light ": "light", "hc": "high-contrast", "monochrome": "mono", "none": "mono"} {
		th, err := ByName(in)
		if err != nil || th.Name != want {
			t.Errorf("ByName(%q) = %q, %v", in, th.Name, err)
		}
	}
	if _, err := ByName("solarized"); err == nil {
		t.Error("unknown theme accepted")
	}
	name := "dark"
	for range Names() {
		name = Next(name).Name
	}
	if name != "dark" {
		t.Errorf("Next does not cycle: %s", name)
	}
}
