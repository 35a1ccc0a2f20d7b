package format

import (
	"fmt"
	"sort"
)

// Mismatch counts the model outputs that carry no call in the configured
// format but calls in another built-in one: a model writing tool_call
// blocks scored as pythonic (or the other way round) scores zero
// everywhere, and Warning says why in one line.
type Mismatch struct {
	f      Format
	others []Format
	n, bad int
	as     map[string]int // per other format, the outputs that parse in it
}

// NewMismatch starts counting outputs against f.
func NewMismatch(f Format) *Mismatch {
	m := &Mismatch{f: f, as: map[string]int{}}
	for _, name := range Names() {
		if name != f.Name() {
			o, _ := Get(name, Options{}) // a registered name
			m.others = append(m.others, o)
		}
	}
	return m
}

// Add counts one output.
func (m *Mismatch) Add(text string) {
	m.n++
	if p := m.f.Parse(text); p.Valid && len(p.Calls) > 0 {
		return
	}
	found := false
	for _, o := range m.others {
		if p := o.Parse(text); p.Valid && len(p.Calls) > 0 {
			m.as[o.Name()]++
			found = true
		}
	}
	if found {
		m.bad++
	}
}

// Warning is one line naming both formats when more than half of the
// outputs counted have no call in the configured format but parse with
// calls in another ("" otherwise). what names the outputs ("eval", "step 3").
func (m *Mismatch) Warning(what string) string {
	if m.bad*2 <= m.n {
		return ""
	}
	names := make([]string, 0, len(m.as))
	for k := range m.as {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return m.as[names[i]] > m.as[names[j]] || m.as[names[i]] == m.as[names[j]] && names[i] < names[j]
	})
	other := names[0]
	return fmt.Sprintf("warning: %s: %d of %d outputs have no call in format %s but parse as %s: the model writes %s; set format: %s (--set format=%s) or train it on %s",
		what, m.bad, m.n, m.f.Name(), other, other, other, other, m.f.Name())
}
