package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argrl/argrl/trainer/metrics"
)

// The report of a tiny GRPO run, opened from disk in headless Chromium:
// it renders with no script error, no console message and no policy
// violation, requests nothing from the network, and its screenshot shows
// the page. TEST_REPORT_SCREENSHOT=docs/report.png also writes the
// screenshot there (a 256-colour copy: the README's picture).
//
// Chromium is Debian's `chromium` (apt-get install -y chromium; .ci/run
// installs it); TEST_CHROMIUM names another binary. Without one the test
// is skipped, and fails when CI is set (CI=1).
func TestReportInChromium(t *testing.T) {
	chrome := findChromium(t)
	run := tinyGRPORun(t)
	if _, stderr, code := runTrain(t, "plot", "--no-png", run); code != 0 {
		t.Fatalf("train plot: exit %d\n%s", code, stderr)
	}
	page := filepath.Join(run, metrics.ReportFile)

	b := browse(t, chrome, page, "--dump-dom", "--window-size=1400,1000") // the screenshot's width: its height
	b.requireClean(t)
	if statusOf(b.stdout) != "ok" {
		t.Fatalf("the page did not render cleanly: %s", firstMatch(b.stdout, `<div id="report-status"[^<]*</div>`))
	}
	for _, want := range []string{`<section id="curves">`, `<section id="evaluation">`, `<section id="rollouts">`, `<section id="config">`,
		`id="chart-reward"`, `id="chart-kl"`, `id="chart-loss"`, `id="chart-entropy"`, `id="chart-clip"`, `id="chart-resp_len"`,
		`id="chart-throughput"`, `class="badge">best/</span>`, `TID es`, `group 1 · `, "algo: grpo"} {
		if !strings.Contains(b.stdout, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	if n := len(regexp.MustCompile(`class="tk( odd)? w v"`).FindAllString(b.stdout, -1)); n == 0 {
		t.Error("no β-weighted argument-value token is highlighted")
	}

	height, _ := strconv.Atoi(firstMatch(b.stdout, `data-height="(\d+)"`))
	height = min(max(height, 1200), 12000)
	shot := filepath.Join(t.TempDir(), "report.png")
	s := browse(t, chrome, page, "--screenshot="+shot, fmt.Sprintf("--window-size=1400,%d", height), "--force-device-scale-factor=0.6")
	s.requireClean(t)
	img := decodePNG(t, shot)
	if w := img.Bounds().Dx(); w != 840 {
		t.Fatalf("screenshot is %d px wide, want 840 (1400 at 0.6)", w)
	}
	if colors, ink := inkStats(img); colors < 50 || ink < 0.03 {
		t.Fatalf("the screenshot looks blank: %d colours, %.3f of the pixels not white", colors, ink)
	}
	if out := os.Getenv("TEST_REPORT_SCREENSHOT"); out != "" {
		if err := writePaletted(img, out); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", out)
	}

	// Several runs, one of them a bare log (no config, evaluations without
	// languages, no rollouts): still a clean page.
	bare := filepath.Join(t.TempDir(), "bare")
	os.MkdirAll(bare, 0o755)
	os.WriteFile(filepath.Join(bare, metrics.File), []byte("{\"step\":1,\"kind\":\"train\",\"loss\":2,\"reward_mean\":0.5}\n"+
		"{\"step\":2,\"kind\":\"train\",\"loss\":1,\"reward_mean\":1}\n{\"step\":2,\"kind\":\"eval\",\"fcm\":0.5}\n"), 0o644)
	if _, stderr, code := runTrain(t, "plot", "--no-png", run, bare); code != 0 {
		t.Fatalf("train plot RUN RUN: exit %d\n%s", code, stderr)
	}
	b = browse(t, chrome, page, "--dump-dom")
	b.requireClean(t)
	if st := statusOf(b.stdout); st != "ok" || !strings.Contains(b.stdout, "grpo-tiny, bare") {
		t.Fatalf("two runs: state %q: %s", st, firstMatch(b.stdout, `<div id="report-status"[^<]*</div>`))
	}

	// The checks catch what they look for: a blocked image and a script
	// error on a page with the report's policy, a request on one without.
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "blocked.html")
	os.WriteFile(bad, bytes.Replace(html, []byte("<body>"), []byte(`<body><img src="http://argrl.invalid/x.png">`), 1), 0o644)
	b = browse(t, chrome, bad, "--dump-dom")
	msg := firstMatch(b.stdout, `<div id="report-status"[^>]*>([^<]*)</div>`)
	if st := statusOf(b.stdout); st != "error" || !strings.Contains(msg, "content security policy: http://argrl.invalid/x.png") || len(b.console) == 0 {
		t.Fatalf("a blocked image went unnoticed: state %q (%s), console %q", st, msg, b.console)
	}
	open := filepath.Join(t.TempDir(), "open.html")
	os.WriteFile(open, []byte(`<!DOCTYPE html><body><img src="http://argrl.invalid/x.png"><script>undefinedFunction()</script></body>`), 0o644)
	b = browse(t, chrome, open, "--dump-dom")
	if len(b.requests) == 0 || !strings.Contains(strings.Join(b.console, "\n"), "undefinedFunction") {
		t.Fatalf("an open page's request or error went unnoticed: requests %q, console %q", b.requests, b.console)
	}
}

func findChromium(t *testing.T) string {
	if p := os.Getenv("TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set and there is no chromium: install it (apt-get install -y chromium; .ci/run does) or set TEST_CHROMIUM")
	}
	t.Skip("chromium not found (Debian: apt-get install -y chromium, or set TEST_CHROMIUM): the browser check of report.html is skipped")
	return ""
}

// browsed is what one headless Chromium run left behind.
type browsed struct {
	stdout   string
	console  []string // console messages of the page (any level)
	requests []string // network requests the page started
}

func (b browsed) requireClean(t *testing.T) {
	t.Helper()
	if len(b.console) > 0 || len(b.requests) > 0 {
		t.Fatalf("the page logged %q and requested %q", b.console, b.requests)
	}
}

// browse opens page in headless Chromium with a fresh profile, every
// host name failing to resolve, console messages on stderr and a NetLog.
func browse(t *testing.T, chrome, page string, args ...string) browsed {
	t.Helper()
	dir := t.TempDir()
	netlog := filepath.Join(dir, "netlog.json")
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--host-resolver-rules=MAP * ~NOTFOUND",
		"--enable-logging=stderr", "--log-level=0", "--log-net-log=" + netlog,
		"--hide-scrollbars", "--virtual-time-budget=5000"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chrome, append(append(base, args...), "file://"+abs)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", chrome, err, e.String())
	}
	b := browsed{stdout: o.String()}
	for _, line := range strings.Split(e.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			b.console = append(b.console, line)
		}
	}
	b.requests = pageRequests(t, netlog)
	return b
}

// pageRequests lists the URL requests of a NetLog that a file:// page
// started (Chromium's own background requests have other initiators).
func pageRequests(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("netlog: %v", err)
	}
	var log struct {
		Constants struct {
			Types map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int `json:"type"`
			Params struct {
				URL       string `json:"url"`
				Initiator string `json:"initiator"`
				NIK       string `json:"network_isolation_key"`
			} `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &log); err != nil {
		t.Fatalf("netlog %s: %v", path, err)
	}
	start, ok := log.Constants.Types["URL_REQUEST_START_JOB"]
	if !ok {
		t.Fatal("netlog: no URL_REQUEST_START_JOB event type")
	}
	var out []string
	for _, e := range log.Events {
		p := e.Params
		if e.Type != start || strings.HasPrefix(p.URL, "file:") || strings.HasPrefix(p.URL, "data:") {
			continue
		}
		if p.Initiator == "null" || strings.HasPrefix(p.Initiator, "file:") || strings.Contains(p.NIK, "file://") {
			out = append(out, p.URL)
		}
	}
	return out
}

// statusOf is the data-state of the page's #report-status element (the
// script's error hook sets "error", a clean render "ok").
func statusOf(dom string) string {
	return firstMatch(dom, `<div id="report-status"[^>]*data-state="([a-z]+)"`)
}

func firstMatch(s, re string) string {
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	switch {
	case m == nil:
		return ""
	case len(m) > 1:
		return m[1]
	}
	return m[0]
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// inkStats counts an image's distinct colours and its share of pixels
// that are not white.
func inkStats(img image.Image) (int, float64) {
	seen := map[color.RGBA]bool{}
	ink, n := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			seen[c] = true
			if c.R < 240 || c.G < 240 || c.B < 240 {
				ink++
			}
			n++
		}
	}
	return len(seen), float64(ink) / float64(n)
}

// writePaletted writes img as a PNG of its 256 most frequent colours
// (every pixel mapped to the nearest of them): a third of the size.
func writePaletted(img image.Image, path string) error {
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	var cs []color.RGBA
	for c := range count {
		cs = append(cs, c)
	}
	sortByCount(cs, count)
	pal := color.Palette{}
	for _, c := range cs[:min(256, len(cs))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	near := map[color.RGBA]uint8{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			i, ok := near[c]
			if !ok {
				i = uint8(pal.Index(c))
				near[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func sortByCount(cs []color.RGBA, count map[color.RGBA]int) {
	key := func(c color.RGBA) uint32 { return uint32(c.R)<<24 | uint32(c.G)<<16 | uint32(c.B)<<8 | uint32(c.A) }
	sort.Slice(cs, func(i, j int) bool {
		if count[cs[i]] != count[cs[j]] {
			return count[cs[i]] > count[cs[j]]
		}
		return key(cs[i]) < key(cs[j])
	})
}
