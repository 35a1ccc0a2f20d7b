package metrics

import (
	"encoding/json"
	"strings"
	"testing"
)

// sampleView cuts on tokens, spans and runes: a token that ends inside a
// multi-byte character gives the character to the token it starts in.
func TestSampleViewSegments(t *testing.T) {
	text := `{"c": "Bogotá"}` // á is 2 bytes: 12, 13
	s := RolloutSample{Text: text,
		Offsets: [][2]int{{0, 2}, {2, 7}, {7, 13}, {13, 16}}, // token 2 ends inside á
		Weights: []float32{1, 1, 3, 3}, Spans: [][2]int{{7, 14}}}
	v := sampleView(s)
	var got []string
	for _, sg := range v.Segs {
		got = append(got, sg[0].(string)+"|"+itoa(sg[1].(int))+"|"+ftoa(sg[2].(float32))+"|"+itoa(sg[3].(int)))
	}
	want := []string{`{"|0|1|0`, `c": "|1|1|0`, `Bogotá|2|3|1`, `"}|3|3|0`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("segments\n%q\nwant\n%q", got, want)
	}
	var joined string
	for _, sg := range v.Segs {
		joined += sg[0].(string)
	}
	if joined != text || v.Weighted != 2 || v.Tokens != 4 || len(v.Values) != 1 || v.Values[0] != "Bogotá" {
		t.Fatalf("joined %q, weighted %d, tokens %d, values %q", joined, v.Weighted, v.Tokens, v.Values)
	}
	// Offsets past the text and spans out of range are clipped, bytes
	// without a token get index -1.
	v = sampleView(RolloutSample{Text: "ab", Offsets: [][2]int{{1, 9}}, Spans: [][2]int{{-3, 1}, {5, 9}}})
	if len(v.Segs) != 2 || v.Segs[0][1].(int) != -1 || v.Segs[0][3].(int) != 1 || v.Segs[1][1].(int) != 0 {
		t.Fatalf("clipped: %v", v.Segs)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func ftoa(f float32) string { b, _ := json.Marshal(f); return string(b) }
