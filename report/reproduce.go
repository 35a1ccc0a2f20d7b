package report

// Paper 000's experiments over several benchmark draws (make reproduce):
// the evaluation files DIR/draw-N/evals/<stage>/<split>.<lang>.json, read
// for every draw N; tables print mean ± sd over the draws beside the
// paper's numbers, and every claim is checked under the strict rule.
//
//	stage dirs   base, sft, grpo, sft-grpo, ppo, sft-ppo     epoch-fixed (final checkpoint)
//	             <stage>-best                                 the checkpoint with the best validation FCM
//	             grpo-rm1-best, grpo-rm2-best                 reward-model ablation (RM-3 is grpo-best)
//	             grpo-b3-best, ppo-b3-best                    β = 3 (β = 1 is grpo-best, ppo-best)
//	files        learn.es, gen.es (Split-1, Split-2); gen.it, gen.nl, gen.fr
//	             (transfer); probe.en (the Table 3 analogue)

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/argrl/argrl/reward"
)

// Draws holds the evaluations of every draw.
type Draws struct {
	Dir   string
	Names []string                // draw directories, in draw order
	reps  []map[Key]reward.Report // per draw
}

// LoadDraws reads DIR/draw-*/evals.
func LoadDraws(dir string) (*Draws, error) {
	ms, err := filepath.Glob(filepath.Join(dir, "draw-*"))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	num := func(p string) int { n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "draw-")); return n }
	sort.Slice(ms, func(i, j int) bool { return num(ms[i]) < num(ms[j]) })
	d := &Draws{Dir: dir}
	for _, m := range ms {
		files, err := filepath.Glob(filepath.Join(m, "evals", "*", "*.json"))
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if len(files) == 0 {
			continue
		}
		reps := map[Key]reward.Report{}
		for _, f := range files {
			split, lang, ok := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".json"), ".")
			if !ok {
				return nil, fmt.Errorf("report: %s: name is not <split>.<lang>.json", f)
			}
			rep, err := readReport(f)
			if err != nil {
				return nil, err
			}
			reps[Key{filepath.Base(filepath.Dir(f)), split, lang}] = rep
		}
		d.Names = append(d.Names, filepath.Base(m))
		d.reps = append(d.reps, reps)
	}
	if len(d.reps) == 0 {
		return nil, fmt.Errorf("report: %s holds no draw-N/evals/<stage>/<split>.<lang>.json files", dir)
	}
	return d, nil
}

// cell names one number of a table: a metric (tid, tsa, aca, alc, fcm) of
// a stage's evaluation on split and lang; lang "avg-unseen" averages the
// unseen languages it, nl and fr.
type cell struct{ stage, split, lang, metric string }

// Values returns the cell's value in points for every draw.
func (d *Draws) values(c cell) ([]float64, error) {
	if c.lang == "avg-unseen" {
		var out []float64
		for _, l := range unseen {
			v, err := d.values(cell{c.stage, c.split, l, c.metric})
			if err != nil {
				return nil, err
			}
			for i := range v {
				if len(out) <= i {
					out = append(out, 0)
				}
				out[i] += v[i] / float64(len(unseen))
			}
		}
		return out, nil
	}
	out := make([]float64, len(d.reps))
	for i, reps := range d.reps {
		r, ok := reps[Key{c.stage, c.split, c.lang}]
		if !ok {
			return nil, fmt.Errorf("report: no evaluation %s", filepath.Join(d.Dir, d.Names[i], "evals", c.stage, c.split+"."+c.lang+".json"))
		}
		switch c.metric {
		case "tid":
			out[i] = 100 * r.TID
		case "tsa":
			out[i] = 100 * r.TSA
		case "aca":
			out[i] = 100 * r.ACA
		case "alc":
			out[i] = 100 * r.ALC
		case "fcm":
			out[i] = 100 * r.FCM
		case "em":
			out[i] = 100 * r.ExactMatch
		default:
			return nil, fmt.Errorf("report: unknown metric %q", c.metric)
		}
	}
	return out, nil
}

var unseen = []string{"it", "nl", "fr"}

// ran reports whether a table row's stages were run: false when no draw
// has an evaluation of any of its stages (an arm the protocol leaves out,
// such as make reproduce's SFT→PPO without REPRO_SFT_PPO=1). A row run on
// some draws and not on others is run, and its missing files are errors.
func (d *Draws) ran(r tableRow) bool {
	for _, c := range r.cells {
		for _, reps := range d.reps {
			for k := range reps {
				if k.Stage == c.stage {
					return true
				}
			}
		}
	}
	return false
}

func paperList(v []float64) string {
	var s []string
	for _, x := range v {
		if math.IsNaN(x) {
			s = append(s, "—")
		} else {
			s = append(s, strconv.FormatFloat(x, 'f', 1, 64))
		}
	}
	return strings.Join(s, " ")
}

// MeanSD is the mean and the sample standard deviation (0 for one value).
func MeanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}

// WriteTables prints every table of paper 000's reproduction.
func (d *Draws) WriteTables(w io.Writer) error {
	return d.writeTables(w, paperTables, "paper 000's number (Qwen2.5-14B)")
}

// writeTables prints tables as mean ± sd over the draws beside the
// paper's numbers (paper names them in the heading).
func (d *Draws) writeTables(w io.Writer, tables []paperTable, paper string) error {
	fmt.Fprintf(w, "%d benchmark draws (%s); each cell is mean ± sd over the draws, [paper] is %s\n",
		len(d.Names), strings.Join(d.Names, ", "), paper)
	for _, t := range tables {
		fmt.Fprintf(w, "\n%s\n", t.title)
		head := fmt.Sprintf("%-14s", "Method")
		for _, c := range t.cols {
			head += fmt.Sprintf(" %20s", c)
		}
		fmt.Fprintln(w, head)
		for _, r := range t.rows {
			line := fmt.Sprintf("%-14s", r.label)
			if !d.ran(r) {
				fmt.Fprintf(w, "%s not run in this protocol (no draw has its evaluations) [paper: %s]\n", line, paperList(r.paper))
				continue
			}
			for i, c := range r.cells {
				v, err := d.values(c)
				if err != nil {
					return err
				}
				m, sd := MeanSD(v)
				paper := "  —  "
				if i < len(r.paper) && !math.IsNaN(r.paper[i]) {
					paper = fmt.Sprintf("%5.1f", r.paper[i])
				}
				line += fmt.Sprintf(" %5.1f ± %4.1f [%s]", m, sd, paper)
			}
			fmt.Fprintln(w, line)
		}
	}
	return nil
}

// ReproClaim is one claim of claims.json. Sanity marks a check of the
// setup rather than a finding of the paper (it holds by construction, or
// tests only the size of a gap that must exist): it is printed and counted
// apart from the claims.
type ReproClaim struct {
	Table  string         `json:"table"`
	Claim  string         `json:"claim"`
	Holds  bool           `json:"holds"`
	Sanity bool           `json:"sanity,omitempty"`
	Values map[string]any `json:"values"`
}

// CountClaims returns how many of the paper's claims hold and how many
// there are, and the same for the sanity checks.
func CountClaims(cs []ReproClaim) (held, claims, saneHeld, sanity int) {
	for _, c := range cs {
		switch {
		case c.Sanity:
			sanity++
			if c.Holds {
				saneHeld++
			}
		default:
			claims++
			if c.Holds {
				held++
			}
		}
	}
	return held, claims, saneHeld, sanity
}

// ordering is a > b, checked per draw.
type ordering struct{ a, b cell }

// check evaluates orderings that must all hold (strict rule each).
func (d *Draws) check(table, text string, os ...ordering) (ReproClaim, error) {
	return d.checkRule(table, text, Strict, os...)
}

// checkRule evaluates orderings that must all hold, each judged by rule
// on its per-draw margins.
func (d *Draws) checkRule(table, text string, rule func([]float64) bool, os ...ordering) (ReproClaim, error) {
	c := ReproClaim{Table: table, Claim: text, Holds: true, Values: map[string]any{}}
	for _, o := range os {
		a, err := d.values(o.a)
		if err != nil {
			return c, err
		}
		b, err := d.values(o.b)
		if err != nil {
			return c, err
		}
		margins := make([]float64, len(a))
		for i := range a {
			margins[i] = Margin(a[i], b[i])
		}
		// The comparison is paired: each draw's margin is a − b on that
		// draw, and their spread (sd over the draws) is the noise the
		// claim is judged against.
		ma, sd := MeanSD(margins)
		holds := rule(margins)
		c.Holds = c.Holds && holds
		c.Values[o.a.label()+" > "+o.b.label()] = map[string]any{"a": rounds(a), "b": rounds(b),
			"margins": margins, "mean_margin": round2(ma), "sd_margin": round2(sd), "holds": holds}
	}
	return c, nil
}

func (c cell) label() string {
	return fmt.Sprintf("%s(%s %s.%s)", strings.ToUpper(c.metric), c.stage, c.split, c.lang)
}

func rounds(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = round2(x)
	}
	return out
}

// Claims checks every claim of issue 22 under the strict rule.
func (d *Draws) Claims() ([]ReproClaim, error) {
	s1 := func(stage, m string) cell { return cell{stage, "learn", "es", m} }
	var out []ReproClaim
	add := func(table, text string, os ...ordering) error {
		c, err := d.check(table, text, os...)
		if err != nil {
			return err
		}
		out = append(out, c)
		return nil
	}
	steps := []func() error{
		func() error {
			return add("2", "SFT > Base (ALC, FCM; Split-1, es)", ordering{s1("sft", "alc"), s1("base", "alc")}, ordering{s1("sft", "fcm"), s1("base", "fcm")})
		},
		func() error {
			return add("2", "epoch-fixed GRPO > SFT (ALC; Split-1, es)", ordering{s1("grpo", "alc"), s1("sft", "alc")})
		},
		func() error {
			return add("4", "best-checkpoint SFT ≥ GRPO on FCM (Split-1, es; strict: ahead by ≥ 1 point)", ordering{s1("sft-best", "fcm"), s1("grpo-best", "fcm")})
		},
		func() error {
			return add("5", "RM-3 > RM-2 > RM-1 (ALC; GRPO, best checkpoint)", ordering{s1("grpo-best", "alc"), s1("grpo-rm2-best", "alc")},
				ordering{s1("grpo-rm2-best", "alc"), s1("grpo-rm1-best", "alc")})
		},
		func() error {
			return add("6", "GRPO > PPO (ALC, FCM; RM-3, best checkpoint)", ordering{s1("grpo-best", "alc"), s1("ppo-best", "alc")},
				ordering{s1("grpo-best", "fcm"), s1("ppo-best", "fcm")})
		},
		func() error {
			return add("7", "β=3 > β=1 for GRPO (ALC, best checkpoint)", ordering{s1("grpo-b3-best", "alc"), s1("grpo-best", "alc")})
		},
		func() error {
			return add("7", "β=3 < β=1 for PPO (ALC, best checkpoint)", ordering{s1("ppo-best", "alc"), s1("ppo-b3-best", "alc")})
		},
		func() error { return d.transferClaim(&out) },
		func() error {
			return add("3", "retention: GRPO ≥ SFT (FCM on held-out English base-corpus requests; strict: ahead by ≥ 1 point)",
				ordering{cell{"grpo-best", "probe", "en", "fcm"}, cell{"sft-best", "probe", "en", "fcm"}})
		},
		func() error {
			// FCM ≤ ALC by construction (reward/levels.go): only the size
			// of the gap is tested, so this is a sanity check, not a claim.
			c, err := d.check("2", "ALC exceeds FCM at the base model by a clear margin (≥ 5 points; Split-1, es)",
				ordering{s1("base", "alc"), s1("base", "fcm")})
			if err != nil {
				return err
			}
			c.Sanity = true
			for k, v := range c.Values {
				m := v.(map[string]any)
				m["holds"] = allAtLeast(m["margins"].([]float64), 5)
				c.Holds = m["holds"].(bool)
				c.Values[k] = m
			}
			out = append(out, c)
			return nil
		},
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func allAtLeast(v []float64, x float64) bool {
	for _, m := range v {
		if m < x {
			return false
		}
	}
	return len(v) > 0
}

// transferClaim: GRPO > Base on at least two of the unseen languages
// (Table 8, Split-2, ALC), each language under the strict rule.
func (d *Draws) transferClaim(out *[]ReproClaim) error {
	c := ReproClaim{Table: "8", Claim: "GRPO > Base on ≥ 2 unseen languages (ALC; Split-2, best checkpoint)", Values: map[string]any{}}
	n := 0
	for _, l := range unseen {
		one, err := d.check("8", "", ordering{cell{"grpo-best", "gen", l, "alc"}, cell{"base", "gen", l, "alc"}})
		if err != nil {
			return err
		}
		for k, v := range one.Values {
			c.Values[l+": "+k] = v
		}
		if one.Holds {
			n++
		}
	}
	c.Values["languages_holding"] = n
	c.Holds = n >= 2
	*out = append(*out, c)
	return nil
}

// WriteReproClaims prints the paper's claims, one line each, with their
// margins, then the sanity checks under a heading of their own.
func WriteReproClaims(w io.Writer, cs []ReproClaim) {
	var claims, sanity []ReproClaim
	for _, c := range cs {
		if c.Sanity {
			sanity = append(sanity, c)
		} else {
			claims = append(claims, c)
		}
	}
	writeReproClaims(w, claims)
	if len(sanity) > 0 {
		fmt.Fprintln(w, "  Sanity checks (they test the setup, not a finding of the paper; counted apart):")
		writeReproClaims(w, sanity)
	}
}

func writeReproClaims(w io.Writer, cs []ReproClaim) {
	for _, c := range cs {
		v := "holds"
		if !c.Holds {
			v = "DOES NOT HOLD"
		}
		where := "Table " + c.Table
		if strings.HasPrefix(c.Table, "§") {
			where = c.Table
		}
		fmt.Fprintf(w, "  %-8s %-13s %s\n", where, v, c.Claim)
		keys := make([]string, 0, len(c.Values))
		for k := range c.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if m, ok := c.Values[k].(map[string]any); ok {
				fmt.Fprintf(w, "             %s: margins %v (paired, mean %.2f ± %.2f sd)\n", k, m["margins"], m["mean_margin"], m["sd_margin"])
			}
		}
	}
}
