package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rawFile builds a file from a literal header string and a data section.
func rawFile(header string, data []byte) []byte {
	var b bytes.Buffer
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	b.Write(n[:])
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	a := []float32{1, -2.5, 3.25, float32(math.Inf(1)), 0, -0.0, 1e-30, 65504}
	bf := []float32{1, 1.0078125, -3, 0.1, 1.00390625, 1.01171875}
	raw := []uint16{0x3f80, 0xc040, 0x7f80, 0x0001}
	tensors := []Tensor{
		FromFloat32("z.weight", []int{2, 4}, a),
		FromFloat32AsBF16("a.bf16", []int{6}, bf),
		FromBF16("m.raw", []int{2, 2}, raw),
		FromFloat32("scalar", []int{}, []float32{7}),
		FromFloat32("empty", []int{0, 3}, nil),
	}
	meta := map[string]string{"format": "pt", "note": "x"}
	p := filepath.Join(t.TempDir(), "m.safetensors")
	if err := WriteFile(p, tensors, meta); err != nil {
		t.Fatal(err)
	}
	blob, _ := os.ReadFile(p)
	hlen := binary.LittleEndian.Uint64(blob)
	if hlen%8 != 0 {
		t.Errorf("header length %d not 8-aligned", hlen)
	}
	// Keys appear sorted in the header text.
	hdr := string(blob[8 : 8+hlen])
	if !(strings.Index(hdr, `"a.bf16"`) < strings.Index(hdr, `"empty"`) &&
		strings.Index(hdr, `"empty"`) < strings.Index(hdr, `"m.raw"`) &&
		strings.Index(hdr, `"scalar"`) < strings.Index(hdr, `"z.weight"`)) {
		t.Errorf("keys not sorted: %s", hdr)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Metadata(); got["format"] != "pt" || got["note"] != "x" {
		t.Errorf("metadata %v", got)
	}
	if n := f.Names(); strings.Join(n, ",") != "a.bf16,empty,m.raw,scalar,z.weight" {
		t.Errorf("names %v", n)
	}
	got, info, err := f.Float32("z.weight")
	if err != nil {
		t.Fatal(err)
	}
	if info.DType != F32 || len(info.Shape) != 2 || info.Shape[0] != 2 || info.Shape[1] != 4 {
		t.Errorf("info %+v", info)
	}
	for i := range a {
		if math.Float32bits(got[i]) != math.Float32bits(a[i]) {
			t.Errorf("z.weight[%d] = %v, want %v", i, got[i], a[i])
		}
	}
	gotBF, _, err := f.Float32("a.bf16")
	if err != nil {
		t.Fatal(err)
	}
	wantBF := []float32{1, 1.0078125, -3, 0.10009765625, 1, 1.015625}
	for i := range wantBF {
		if gotBF[i] != wantBF[i] {
			t.Errorf("a.bf16[%d] = %v, want %v", i, gotBF[i], wantBF[i])
		}
	}
	bits, _, err := f.BF16("m.raw")
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		if bits[i] != raw[i] {
			t.Errorf("m.raw[%d] = %#x, want %#x", i, bits[i], raw[i])
		}
	}
	if _, _, err := f.BF16("z.weight"); err == nil || !strings.Contains(err.Error(), "not BF16") {
		t.Errorf("BF16 on F32 tensor: %v", err)
	}
	if s, _, err := f.Float32("scalar"); err != nil || len(s) != 1 || s[0] != 7 {
		t.Errorf("scalar = %v, %v", s, err)
	}
	if e, info, err := f.Float32("empty"); err != nil || len(e) != 0 || info.NumElements() != 0 {
		t.Errorf("empty = %v, %v", e, err)
	}
	if _, _, err := f.Float32("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), p) {
		t.Errorf("missing tensor error: %v", err)
	}
	// Rewriting the same tensors gives identical bytes (deterministic).
	var buf bytes.Buffer
	if err := Encode(&buf, tensors, meta); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), blob) {
		t.Error("Encode is not deterministic")
	}
	// No temp files remain beside the output.
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want 1", len(ents))
	}
}

func TestF16AndF64(t *testing.T) {
	halves := []uint16{0x3c00, 0xc000, 0x0001, 0x03ff, 0x7bff, 0x7c00, 0xfc00, 0x8000, 0x3555}
	want := []float32{1, -2, 1.0 / (1 << 24), 1023.0 / (1 << 24), 65504, float32(math.Inf(1)), float32(math.Inf(-1)), 0, 0.333251953125}
	data := make([]byte, 2*len(halves))
	for i, h := range halves {
		binary.LittleEndian.PutUint16(data[2*i:], h)
	}
	d64 := make([]byte, 16)
	binary.LittleEndian.PutUint64(d64, math.Float64bits(math.Pi))
	binary.LittleEndian.PutUint64(d64[8:], math.Float64bits(-1e-3))
	p := filepath.Join(t.TempDir(), "h.safetensors")
	err := WriteFile(p, []Tensor{
		{Name: "h", DType: F16, Shape: []int{len(halves)}, Data: data},
		{Name: "nan", DType: F16, Shape: []int{1}, Data: []byte{0x00, 0x7e}},
		{Name: "d", DType: F64, Shape: []int{2}, Data: d64},
		{Name: "i", DType: I32, Shape: []int{1}, Data: []byte{1, 0, 0, 0}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, _, err := f.Float32("h")
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("f16 %#04x -> %v, want %v", halves[i], got[i], want[i])
		}
	}
	if math.Signbit(float64(got[7])) != true {
		t.Error("f16 -0 lost its sign")
	}
	if n, _, _ := f.Float32("nan"); !math.IsNaN(float64(n[0])) {
		t.Errorf("f16 NaN -> %v", n[0])
	}
	if d, _, err := f.Float64("d"); err != nil || d[0] != math.Pi || d[1] != -1e-3 {
		t.Errorf("f64 = %v, %v", d, err)
	}
	if _, _, err := f.Float32("i"); err == nil || !strings.Contains(err.Error(), "I32") || !strings.Contains(err.Error(), `"i"`) {
		t.Errorf("I32 to float32: %v", err)
	}
	if b, info, err := f.Bytes("i"); err != nil || info.DType != I32 || len(b) != 4 || b[0] != 1 {
		t.Errorf("raw I32 = %v %v %v", b, info, err)
	}
}

func TestBF16Rounding(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above half
		{0x7f7fffff, 0x7f80}, // max float rounds to +Inf
		{0x7fc00001, 0x7fc0}, // NaN stays NaN
		{0xff800001, 0xffc0}, // signalling NaN gets quieted, sign kept
	}
	for _, c := range cases {
		if got := Float32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

// Every prefix of a valid file is refused with an error naming the file.
func TestTruncated(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, []Tensor{FromFloat32("w", []int{3}, []float32{1, 2, 3}), FromFloat32("b", []int{1}, []float32{4})}, nil); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	dir := t.TempDir()
	for n := 0; n < len(full); n++ {
		p := filepath.Join(dir, "cut.safetensors")
		if err := os.WriteFile(p, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(p)
		if err == nil {
			f.Close()
			t.Fatalf("prefix of %d/%d bytes accepted", n, len(full))
		}
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error does not name the file: %v", err)
		}
		if n > 8+int(binary.LittleEndian.Uint64(full)) && !strings.Contains(err.Error(), "truncated") {
			t.Errorf("prefix %d: error does not say truncated: %v", n, err)
		}
	}
}

func TestBadHeaders(t *testing.T) {
	four := make([]byte, 4)
	eight := make([]byte, 8)
	hugeLen := make([]byte, 16)
	binary.LittleEndian.PutUint64(hugeLen, 1<<40)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"bad json", rawFile(`{"w": {"dtype": "F32", "shape": [1], `, four), "header JSON"},
		{"not object", rawFile(`[1, 2]`, nil), "does not start with '{'"},
		{"trailing", rawFile(`{} {}`, nil), "trailing"},
		{"huge length", hugeLen, "exceeds"},
		{"unknown dtype", rawFile(`{"w": {"dtype": "F24", "shape": [1], "data_offsets": [0, 4]}}`, four), `tensor "w": unknown dtype "F24"`},
		{"missing dtype", rawFile(`{"w": {"shape": [1], "data_offsets": [0, 4]}}`, four), `tensor "w": missing "dtype"`},
		{"missing offsets", rawFile(`{"w": {"dtype": "F32", "shape": [1]}}`, four), `missing "data_offsets"`},
		{"span mismatch", rawFile(`{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}`, four), `tensor "w": F32 shape [2] needs 8 bytes`},
		{"past end", rawFile(`{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}`, four), "run past the end"},
		{"overlap", rawFile(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}`, four), "overlap"},
		{"gap", rawFile(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}`, eight), "gap"},
		{"trailing bytes", rawFile(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}`, eight), "trailing bytes"},
		{"reversed offsets", rawFile(`{"a": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}}`, four), "invalid data_offsets"},
		{"negative dim", rawFile(`{"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}`, four), "negative dimension"},
		{"overflow shape", rawFile(`{"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 4]}}`, four), "too large"},
		{"three offsets", rawFile(`{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}`, four), "2 elements"},
		{"float shape", rawFile(`{"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}}`, four), `tensor "a"`},
		{"bad metadata", rawFile(`{"__metadata__": {"k": 1}}`, nil), "__metadata__"},
		{"tiny length", rawFile(`{`, nil), "too small"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "bad.safetensors", c.file)
			f, err := Open(p)
			if err == nil {
				f.Close()
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not contain %q and the path", err, c.want)
			}
		})
	}
}

func TestWriteRejects(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.safetensors")
	cases := map[string][]Tensor{
		"needs 8 bytes":       {{Name: "a", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}},
		"duplicate":           {FromFloat32("a", []int{1}, []float32{1}), FromFloat32("a", []int{1}, []float32{2})},
		"unknown dtype":       {{Name: "a", DType: "X", Shape: []int{1}, Data: []byte{0}}},
		"invalid tensor name": {FromFloat32("__metadata__", []int{1}, []float32{1})},
	}
	for want, ts := range cases {
		if err := WriteFile(p, ts, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("failed writes left a file behind")
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 0 {
		t.Errorf("failed writes left %d temp files", len(ents))
	}
}

func writeShards(t *testing.T, dir string) {
	t.Helper()
	if err := WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), []Tensor{
		FromFloat32("a", []int{2}, []float32{1, 2}), FromFloat32("b", []int{1}, []float32{3}),
	}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), []Tensor{
		FromFloat32AsBF16("c", []int{1, 2}, []float32{4, 5}),
	}, nil); err != nil {
		t.Fatal(err)
	}
}

func writeIndex(t *testing.T, dir string, wm map[string]string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 16}, "weight_map": wm})
	if err := os.WriteFile(filepath.Join(dir, IndexName), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSharded(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir)
	s1, s2 := "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	writeIndex(t, dir, map[string]string{"a": s1, "b": s1, "c": s2})
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Names(), ",") != "a,b,c" {
		t.Errorf("names %v", s.Names())
	}
	c, info, err := s.Float32("c")
	if err != nil || c[0] != 4 || c[1] != 5 || info.DType != BF16 {
		t.Errorf("c = %v %v %v", c, info, err)
	}
	if !strings.HasSuffix(s.FileOf("c"), s2) {
		t.Errorf("FileOf(c) = %s", s.FileOf("c"))
	}
	s.Close()

	bad := []struct {
		wm   map[string]string
		want string
	}{
		{map[string]string{"a": s2, "b": s1, "c": s2}, `tensor "a" is mapped to ` + s2 + ` but found in`},
		{map[string]string{"a": s1, "c": s2}, `tensor "b" in`},
		{map[string]string{"a": s1, "b": s1, "c": s2, "d": s2}, `tensor "d" is mapped to`},
		{map[string]string{"a": "../etc/passwd"}, "is not a file name"},
		{map[string]string{"a": "missing.safetensors"}, "missing.safetensors"},
		{map[string]string{}, `"weight_map" is missing or empty`},
	}
	for _, b := range bad {
		writeIndex(t, dir, b.wm)
		if s, err := OpenDir(dir); err == nil {
			s.Close()
			t.Errorf("index %v accepted", b.wm)
		} else if !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), IndexName) {
			t.Errorf("index %v: error %q lacks %q or the index path", b.wm, err, b.want)
		}
	}
	// Duplicate tensor across files.
	if err := WriteFile(filepath.Join(dir, "dup.safetensors"), []Tensor{FromFloat32("a", []int{1}, []float32{9})}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFiles(filepath.Join(dir, s1), filepath.Join(dir, "dup.safetensors")); err == nil || !strings.Contains(err.Error(), `tensor "a" is in both`) {
		t.Errorf("duplicate across shards: %v", err)
	}
	if _, err := OpenDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestSingleDirAndClose(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, SingleName), []Tensor{FromFloat32("w", []int{1}, []float32{2})}, nil); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := s.Float32("w"); err != nil || v[0] != 2 {
		t.Fatalf("w = %v %v", v, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(filepath.Join(dir, SingleName))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, _, err := f.Float32("w"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("read after close: %v", err)
	}
}
