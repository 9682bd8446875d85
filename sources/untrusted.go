package sources

import "reflect"

// SanitizeAll passes every string v holds (exported struct fields,
// slices, arrays, pointers, interfaces, map keys and values) through
// Sanitize, in place, cutting each to max runes (0: no cut). It is how an
// untrusted document (a recording's header and frames, a config file, an
// API answer decoded into a struct) enters vtop: once, whole, so a field
// added later is covered without anyone remembering to. v must be a
// pointer.
func SanitizeAll(v any, max int) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		panic("sources.SanitizeAll: not a pointer")
	}
	sanitizeValue(rv.Elem(), max)
}

func sanitizeValue(v reflect.Value, max int) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); Sanitize(s, max) != s {
			if v.CanSet() {
				v.SetString(Sanitize(s, max))
			}
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		if v.Kind() == reflect.Interface && !e.CanSet() {
			// A value in an interface is not addressable: copy, clean, put back.
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			sanitizeValue(c, max)
			if v.CanSet() {
				v.Set(c)
			}
			return
		}
		sanitizeValue(e, max)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !f.CanSet() {
				continue // unexported: a package's own state, not input
			}
			sanitizeValue(f, max)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes (a raw body, a JSON document) are parsed, not shown
		}
		for i := 0; i < v.Len(); i++ {
			sanitizeValue(v.Index(i), max)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		// Keys and values alike; a key that changes moves its entry.
		iter := v.MapRange()
		type kv struct{ k, v reflect.Value }
		var all []kv
		for iter.Next() {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(iter.Key())
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			all = append(all, kv{k, e})
		}
		for _, p := range all {
			old := reflect.New(p.k.Type()).Elem()
			old.Set(p.k)
			sanitizeValue(p.k, max)
			sanitizeValue(p.v, max)
			v.SetMapIndex(old, reflect.Value{})
			v.SetMapIndex(p.k, p.v)
		}
	}
}
