// Package hostiletest holds what the hostile-input and bad-input tests of
// several packages share: the hostile values both adapters try, so that
// the gRPC and the HTTP side are tried with the same, and PanicOf, which
// the TestBadInput tables use to check a documented panic.
package hostiletest

import "strings"

// A Criticality is the criticality field (HTTP header or gRPC metadata)
// as a hostile or careless client may send it: its values, and the level a
// trusted caller gets for them — the level's name, or "-" for none (the
// field is ignored and counted as invalid). The zero value is no field.
type Criticality struct {
	Name   string
	Values []string
	Level  string
}

// Criticalities are the hostile criticality fields both adapters try. Only
// the four names, in any ASCII case, alone, give a level.
var Criticalities = []Criticality{
	{"mixed case", []string{"ShEdDaBlE"}, "sheddable"},
	{"upper case", []string{"CRITICAL_PLUS"}, "critical_plus"},
	{"huge", []string{strings.Repeat("critical_plus", 1<<16)}, "-"},
	{"huge padding", []string{"sheddable" + strings.Repeat(" ", 1<<20)}, "-"},
	{"space padded", []string{" sheddable "}, "-"},
	{"tab padded", []string{"\tsheddable"}, "-"},
	{"malformed", []string{"critical_plus;q=1"}, "-"},
	{"a list in one value", []string{"sheddable, critical_plus"}, "-"},
	{"control", []string{"sheddable\x00"}, "-"},
	{"header injection", []string{"sheddable\r\nx-evil: 1"}, "-"},
	{"invalid UTF-8", []string{"sheddable\xff"}, "-"},
	{"long s", []string{"ſheddable"}, "-"},
	{"empty", []string{""}, "-"},
	{"two levels", []string{"sheddable", "critical_plus"}, "-"},
	{"10,000 entries", Repeat("critical_plus", 10_000), "-"},
}

// Repeat returns n copies of s.
func Repeat(s string, n int) []string {
	vs := make([]string, n)
	for i := range vs {
		vs[i] = s
	}
	return vs
}

// PanicOf returns what f panicked with, or "" if it returned: the message
// of a string panic, else "a panic that is not a string".
func PanicOf(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg, _ = v.(string)
			if msg == "" {
				msg = "a panic that is not a string"
			}
		}
	}()
	f()
	return ""
}
