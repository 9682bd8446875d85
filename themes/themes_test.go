package themes

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"testing"
)

// A color theme names every color; mono names none.
func TestPalettes(t *testing.T) {
	hex := regexp.MustCompile(`^#[0-9a-f]{6}$`)
	for _, th := range all {
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

// Every color theme is legible against its own background (which the UI
// paints, so the terminal's does not matter): text and states at WCAG's
// 4.5:1, labels and sparklines at 3:1, an empty gauge still visible.
func TestContrast(t *testing.T) {
	for _, th := range all {
		if !th.Color {
			continue
		}
		for _, c := range []struct {
			name   string
			fg, bg string
			min    float64
		}{
			{"Text", th.Text, th.Bg, 4.5}, {"Accent", th.Accent, th.Bg, 4.5}, {"Key", th.Key, th.Bg, 4.5},
			{"OK", th.OK, th.Bg, 4.5}, {"Warn", th.Warn, th.Bg, 4.5}, {"Crit", th.Crit, th.Bg, 4.5}, {"Info", th.Info, th.Bg, 4.5},
			{"Muted", th.Muted, th.Bg, 3}, {"Spark", th.Spark, th.Bg, 3}, {"BarEmpty", th.BarEmpty, th.Bg, 1.5},
			{"Header", th.HeaderFg, th.HeaderBg, 4.5}, {"Selection", th.SelFg, th.SelBg, 4.5},
		} {
			if r := contrast(c.fg, c.bg); r < c.min {
				t.Errorf("%s: %s %s on %s is %.2f:1, want %.1f", th.Name, c.name, c.fg, c.bg, r, c.min)
			}
		}
	}
}

// contrast is WCAG 2's contrast ratio of two "#rrggbb" colors.
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	var rgb [3]float64
	for i := range rgb {
		var v int
		fmt.Sscanf(hex[1+2*i:3+2*i], "%02x", &v)
		c := float64(v) / 255
		if c <= 0.03928 {
			rgb[i] = c / 12.92
		} else {
			rgb[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
}
