package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/data/synth"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/serve"
	"github.com/argrl/argrl/serve/servetest"
)

// TestEvalEndpointMatchesModel: `train eval --bench bfcl --endpoint URL`
// against `train serve` on the demo's base model gives the same table and
// the same report as the model-driven `eval --bench bfcl --model` (same
// greedy answers, the same checker), through the server's tool_calls.
func TestEvalEndpointMatchesModel(t *testing.T) {
	tmp := t.TempDir()
	base := servetest.BaseModel()
	s := servetest.Start(t, base, serve.Options{APIKey: "sk-eval"})
	t.Setenv("ARGRL_TEST_EVAL_KEY", "sk-eval")
	a, b := filepath.Join(tmp, "endpoint.json"), filepath.Join(tmp, "model.json")
	viaServer, _, err := runCmd(t, newEvalCmd, "--bench", "bfcl", bfclDir, "--endpoint", s.URL+"/v1", "--endpoint-key-env", "ARGRL_TEST_EVAL_KEY",
		"--endpoint-concurrency", "4", "--max-new-tokens", "48", "--out", a)
	if err != nil {
		t.Fatal(err)
	}
	viaModel, _, err := runCmd(t, newEvalCmd, "--bench", "bfcl", bfclDir, "--model", base, "--max-new-tokens", "48", "--out", b)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := os.ReadFile(a)
	jb, _ := os.ReadFile(b)
	if viaServer != viaModel || string(ja) != string(jb) || len(ja) == 0 {
		t.Errorf("endpoint and model evaluations differ:\n%s\n%s\nvs\n%s\n%s", viaServer, ja, viaModel, jb)
	}
	t.Logf("\n%s", viaServer)
	if _, _, err := runCmd(t, newEvalCmd, "--bench", "bfcl", bfclDir, "--endpoint", s.URL+"/v1", "--max-new-tokens", "8"); err == nil {
		t.Error("no API key: want the server's 401 as an error")
	}
}

// TestEndpointResponsesMatchModel: record by record, the answers eval gets
// through --endpoint parse into the same calls (names, arguments with their
// written numbers) or the same no-call as the model-driven answers, on
// synthetic records the demo's base model answers with calls.
func TestEndpointResponsesMatchModel(t *testing.T) {
	cfg := synth.DefaultConfig()
	cfg.Train, cfg.Val, cfg.Test, cfg.Base = 2, 12, 1, 2
	o, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	recs := o.Val
	base := servetest.BaseModel()
	s := servetest.Start(t, base, serve.Options{})
	collect := func(f *evalFlags) []string {
		f.reward = reward.DefaultConfig()
		f.gen.maxNewTokens, f.gen.batch = 64, 64
		texts := make([]string, len(recs))
		c := &cobra.Command{}
		c.SetContext(context.Background())
		c.SetErr(&bytes.Buffer{})
		if err := responses(c, f, recs, func(i int, text string) error { texts[i] = text; return nil }); err != nil {
			t.Fatal(err)
		}
		return texts
	}
	viaServer := collect(&evalFlags{endpoint: endpointFlags{url: s.URL + "/v1", concurrency: 3}})
	viaModel := collect(&evalFlags{model: base})
	fm, _ := format.Get("tool_call", format.Options{})
	withCalls := 0
	for i := range recs {
		a, b := fm.Parse(viaServer[i]), fm.Parse(viaModel[i])
		if describe(a) != describe(b) {
			t.Errorf("record %s: endpoint %s (%q), model %s (%q)", recs[i].ID, describe(a), viaServer[i], describe(b), viaModel[i])
		}
		if len(b.Calls) > 0 {
			withCalls++
		}
	}
	if withCalls < len(recs)/2 {
		t.Fatalf("only %d of %d model answers call a tool: the comparison would test little", withCalls, len(recs))
	}
}

// describe is a parse's calls with their exact arguments, or its no-call.
func describe(p format.Parsed) string {
	if !p.Valid {
		return "invalid"
	}
	var b bytes.Buffer
	for _, c := range p.Calls {
		fmt.Fprintf(&b, "%s(", c.Name)
		for _, k := range c.Exact.Keys {
			fmt.Fprintf(&b, "%s=%#v;", k, c.Exact.Values[k])
		}
		b.WriteString(") ")
	}
	if p.NoCall {
		b.WriteString("no call")
	}
	return b.String()
}

func TestPythonArgs(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": 5.0, "b": [1, "x\"y"], "c": {"d": null, "e": true}, "f": false}`: `a=5.0, b=[1, "x\"y"], c={"d": None, "e": True}, f=False`,
		`{}`:      ``,
		`[1]`:     `[1]`,
		`{"a": 1`: `{"a": 1`,
	} {
		if got := pythonArgs(in); got != want {
			t.Errorf("pythonArgs(%s) = %s, want %s", in, got, want)
		}
	}
}
