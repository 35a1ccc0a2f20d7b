package trainer

// Setup: what every recipe (SFT, GRPO, PPO) builds from its config before
// the first step, in this order, so that a bad path or an empty dataset
// fails in a second, before any weights are read:
//
//	model.path/config.json → chat template (model.template, or the family's)
//	model.tokenizer (or model.path) → tokenizer; format → output format
//	data.train, data.val → records → rendered, tokenized Examples
//	                       (loss mask = the chat template's assistant mask)
//	model.backend → kernels.Backend (auto: cuda when the binary has it and
//	                       a GPU answers, else cpu; the choice is printed)
//	model.path + model.init + lora.* → model.Model (LoRA, full fine-tuning,
//	                       an adapter to continue, a value head)
//	format + judge → reward.Scorer (validation metrics, RL rewards)
//
// Sequences longer than model.max_len are cut at the right, as TRL's
// max_length does; a record with no assistant token left is dropped with a
// warning, and a dataset with none at all is an error.
//
// Checkpointed model files (SaveModel / LoadModel):
//
//	LoRA:           adapter_config.json + adapter_model.safetensors (PEFT names, F32)
//	full fine-tune: model.safetensors (F32, checkpoint names) + config.json and the
//	                tokenizer files, so the checkpoint is itself a model directory.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/optim"
	"github.com/argrl/argrl/trainer/ranks"
)

// Example is one encoded training or validation record.
type Example struct {
	Rec       *data.Record
	IDs       []int32 // prompt + target tokens, cut to model.max_len
	Mask      []bool  // the SFT loss is taken where Mask[t] (the assistant target)
	PromptLen int     // IDs[:PromptLen] is the prompt rollout continues
	Targets   int     // number of true entries of Mask
}

// Dataset is an encoded JSONL file.
type Dataset struct {
	Path      string
	Examples  []Example
	Records   int // records in the file
	Truncated int // examples cut to model.max_len
	Dropped   int // records with no target token left after the cut
}

// Lengths returns the token count of every example (for the Batcher).
func (d *Dataset) Lengths() []int {
	out := make([]int, len(d.Examples))
	for i, e := range d.Examples {
		out[i] = len(e.IDs)
	}
	return out
}

// SetupOptions are what a recipe adds to its config.
type SetupOptions struct {
	// ValueHead adds PPO's value head to the model.
	ValueHead bool
	// Adapter loads a PEFT adapter directory as the trainable LoRA
	// (e.g. init.adapter); its r and targets must match lora.*.
	Adapter string
	// NoTrainData skips data.train (evaluation-only setups).
	NoTrainData bool
	// NoModel stops after the data: no backend, model or scorer
	// (--debug-template).
	NoModel bool
	// Log receives warnings and the setup summary (nil: discarded).
	Log io.Writer
	// Ranks is the run's team (Run.Ranks; nil: one process): Evaluate
	// splits its work over the ranks.
	Ranks *ranks.Team
	// Backend replaces model.backend's (cmd/train opens one per rank with
	// dist.OpenBackend, the Comm above moving its buffers).
	Backend kernels.Backend
}

// Setup is a recipe's resolved configuration: the loaded model, tokenizer,
// template, format, scorer and encoded datasets.
type Setup struct {
	Config    config.Config
	Backend   kernels.Backend
	Model     *model.Model
	Tokenizer *tokenizer.Tokenizer
	Template  chat.Template
	Format    format.Format
	Scorer    *reward.Scorer
	Train     *Dataset // nil with NoTrainData
	Val       *Dataset // nil without data.val
	MaxLen    int      // the sequence cap: model.max_len

	log   io.Writer
	ranks *ranks.Team // the ranks Evaluate splits its work over

	// notedChat: Evaluate has said that plain-chat records skip the call
	// metrics; warned: the kinds of output warnFormat has warned about.
	notedChat bool
	warned    map[string]bool
}

// NewSetup builds everything cfg describes; see the file header.
func NewSetup(cfg config.Config, o SetupOptions) (s *Setup, err error) {
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	s = &Setup{Config: cfg, MaxLen: cfg.Model.MaxLen, log: log, ranks: o.Ranks}
	if s.ranks == nil {
		s.ranks = ranks.One()
	}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	if cfg.Model.Path == "" {
		return nil, errors.New(`key "model.path" is empty: give a Hugging Face model directory`)
	}
	if cfg.Model.MaxLen < 2 {
		return nil, fmt.Errorf(`key "model.max_len": must be ≥ 2, got %d`, cfg.Model.MaxLen)
	}
	mc, err := model.LoadConfig(cfg.Model.Path)
	if err != nil {
		return nil, fmt.Errorf(`key "model.path": %w`, err)
	}
	tmplName := cfg.Model.Template
	if tmplName == "" {
		tmplName = mc.ModelType
	}
	if s.Template, err = chat.New(tmplName, chat.Options{System: cfg.Model.System}); err != nil {
		return nil, fmt.Errorf(`key "model.template": %w`, err)
	}
	tokPath := cfg.Model.Tokenizer
	if tokPath == "" {
		tokPath = cfg.Model.Path
	}
	if s.Tokenizer, err = tokenizer.Load(tokPath); err != nil {
		return nil, fmt.Errorf(`key "model.tokenizer" (default: model.path): %w`, err)
	}
	if n := s.Tokenizer.VocabSize(); n > mc.VocabSize {
		return nil, fmt.Errorf("tokenizer %s has %d tokens, more than vocab_size %d of %s", s.Tokenizer.File(), n, mc.VocabSize, mc.Path)
	}
	if s.Format, err = format.Get(cfg.Format, format.Options{RejectString: cfg.Reward.RejectString}); err != nil {
		return nil, fmt.Errorf(`key "format": %w`, err)
	}
	if !o.NoTrainData {
		if cfg.Data.Train == "" {
			return nil, errors.New(`key "data.train" is empty: give the training JSONL file`)
		}
		if s.Train, err = s.EncodeSplit(cfg.Data.Train, cfg.Data.TrainSplit, "data.train", log); err != nil {
			return nil, fmt.Errorf(`key "data.train": %w`, err)
		}
	}
	if cfg.Data.Val != "" {
		if s.Val, err = s.EncodeSplit(cfg.Data.Val, cfg.Data.ValSplit, "data.val", log); err != nil {
			return nil, fmt.Errorf(`key "data.val": %w`, err)
		}
		if err := checkBestRule(cfg, s.Val); err != nil {
			return nil, err
		}
	}
	if o.NoModel {
		return s, nil
	}
	if s.Scorer, err = reward.NewScorer(RewardPackageConfig(cfg)); err != nil {
		return nil, err
	}
	var chosen string
	if s.Backend = o.Backend; s.Backend == nil {
		if s.Backend, chosen, err = kernels.Choose(cfg.Model.Backend); err != nil {
			return nil, fmt.Errorf(`key "model.backend": %w`, err)
		}
	} else {
		chosen = s.Backend.Name()
	}
	fmt.Fprintf(log, "setup: backend %s\n", chosen)
	if cfg.Model.MaxLen > mc.MaxPositions {
		fmt.Fprintf(log, "setup: warning: model.max_len %d exceeds max_position_embeddings %d of %s\n", cfg.Model.MaxLen, mc.MaxPositions, mc.Path)
	}
	if s.Model, err = OpenModel(cfg, s.Backend, o); err != nil {
		return nil, err
	}
	return s, nil
}

// Close frees the model, then closes the backend NewSetup opened (a
// failure to close it is reported on SetupOptions.Log).
func (s *Setup) Close() {
	if s == nil {
		return
	}
	if s.Model != nil {
		s.Model.Close()
		s.Model = nil
	}
	if s.Backend != nil {
		if r, ok := s.Backend.(kernels.MemReporter); ok {
			fmt.Fprintf(s.log, "setup: %s memory pool: %s\n", s.Backend.Name(), r.MemReport())
		}
		if err := s.Backend.Close(); err != nil {
			fmt.Fprintf(s.log, "setup: warning: %v\n", err)
		}
		s.Backend = nil
	}
}

// Encode reads, renders and tokenizes a JSONL file. Records without any
// assistant token after the model.max_len cut are dropped (reported on log);
// a file left without examples is an error.
func (s *Setup) Encode(path string, log io.Writer) (*Dataset, error) {
	return s.EncodeSplit(path, "", "", log)
}

// EncodeSplit is Encode on the records of split (data.ReadTraining; key
// names the config key in its errors, "" for a plain file read).
func (s *Setup) EncodeSplit(path, split, key string, log io.Writer) (*Dataset, error) {
	var recs []data.Record
	var err error
	if key == "" {
		recs, err = data.ReadSpec(path)
	} else {
		recs, err = data.ReadTraining(path, split, key)
	}
	if err != nil {
		return nil, err
	}
	d := &Dataset{Path: path, Records: len(recs)}
	var dropped []string
	for i := range recs {
		rec := &recs[i]
		r, err := s.Template.Render(*rec, s.Format, true)
		if err != nil {
			return nil, fmt.Errorf("%s: record %d (id %q): %w", path, i+1, rec.ID, err)
		}
		enc := r.Encode(s.Tokenizer)
		ex := Example{Rec: rec, IDs: enc.IDs, Mask: enc.AssistantMask, PromptLen: enc.PromptLen}
		if len(ex.IDs) > s.MaxLen {
			ex.IDs, ex.Mask = ex.IDs[:s.MaxLen], ex.Mask[:s.MaxLen]
			d.Truncated++
		}
		for t := 1; t < len(ex.Mask); t++ { // token 0 is never predicted
			if ex.Mask[t] {
				ex.Targets++
			}
		}
		if ex.Targets == 0 {
			d.Dropped++
			dropped = append(dropped, rec.ID)
			continue
		}
		d.Examples = append(d.Examples, ex)
	}
	if len(d.Examples) == 0 {
		why := "it holds no records"
		if d.Records > 0 {
			why = fmt.Sprintf("none of its %d records keeps an assistant target token within model.max_len = %d (prompts are longer)", d.Records, s.MaxLen)
		}
		return nil, fmt.Errorf("%s: no assistant targets to train or validate on: %s", path, why)
	}
	if d.Dropped > 0 {
		fmt.Fprintf(log, "setup: %s: dropped %d of %d records whose prompt fills model.max_len = %d (ids %s)\n",
			path, d.Dropped, d.Records, s.MaxLen, firstFew(dropped))
	}
	if d.Truncated > 0 {
		fmt.Fprintf(log, "setup: %s: %d records cut to model.max_len = %d tokens\n", path, d.Truncated, s.MaxLen)
	}
	return d, nil
}

func firstFew(ids []string) string {
	if len(ids) > 5 {
		return strings.Join(ids[:5], ", ") + ", ..."
	}
	return strings.Join(ids, ", ")
}

// CheckInputs checks, before a run directory is made, that the files a
// run reads are there: model.path's config.json (parsed: the model's
// header), the tokenizer's directory, data.train and data.val.
func CheckInputs(cfg config.Config) error {
	if cfg.Model.Path == "" {
		return errors.New(`key "model.path" is empty: give a Hugging Face model directory`)
	}
	if _, err := model.LoadConfig(cfg.Model.Path); err != nil {
		return fmt.Errorf(`key "model.path": %w`, err)
	}
	if tok := cfg.Model.Tokenizer; tok != "" {
		if _, err := os.Stat(tok); err != nil {
			return fmt.Errorf(`key "model.tokenizer": %w`, err)
		}
	}
	for _, f := range []struct{ key, path string }{{"data.train", cfg.Data.Train}, {"data.val", cfg.Data.Val}} {
		if f.path == "" {
			continue
		}
		path, _, err := data.ParseSpec(f.path) // FILE#split=NAME
		if err != nil {
			return fmt.Errorf("key %q: %w", f.key, err)
		}
		if st, err := os.Stat(path); err != nil {
			return fmt.Errorf("key %q: %w", f.key, err)
		} else if st.IsDir() {
			return fmt.Errorf("key %q: %s is a directory, not a JSONL file", f.key, f.path)
		}
	}
	return nil
}

// adamWConfig maps optim.* onto AdamW's hyper-parameters, norms and
// biases excluded from weight decay as Hugging Face does.
func adamWConfig(c config.OptimConfig) optim.AdamWConfig {
	return optim.AdamWConfig{Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps, WeightDecay: c.WeightDecay, NoDecay: optim.NormsAndBiases}
}

// scheduleConfig maps optim.* onto the learning-rate schedule's keys.
func scheduleConfig(c config.OptimConfig) optim.ScheduleConfig {
	return optim.ScheduleConfig{Kind: c.Schedule, LR: c.LR, WarmupRatio: c.WarmupRatio, MinLRRatio: c.MinLRRatio}
}

// LoRAOptions maps lora.* and run.seed onto the model's adapter options
// (short target names q, k, v, o, gate, up, down become q_proj, ...).
func LoRAOptions(cfg config.Config) *model.LoRAOptions {
	var targets []string
	for _, t := range cfg.LoRA.Targets {
		targets = append(targets, config.LoRATarget(t))
	}
	return &model.LoRAOptions{R: cfg.LoRA.R, Alpha: cfg.LoRA.Alpha, Dropout: cfg.LoRA.Dropout,
		Targets: targets, Seed: uint64(cfg.Run.Seed)}
}

// OpenModel opens model.path (or fresh weights for it, with model.init:
// random) on be: with LoRA adapters when lora.enabled (loaded from
// o.Adapter when given), else every weight trainable (full fine-tuning).
func OpenModel(cfg config.Config, be kernels.Backend, o SetupOptions) (*model.Model, error) {
	opts := model.Options{MaxLen: cfg.Model.MaxLen, ValueHead: o.ValueHead, Compute: cfg.Model.Compute, Recompute: cfg.Model.Recompute,
		Pack: cfg.Data.Packing}
	if cfg.LoRA.Enabled {
		opts.LoRA, opts.Adapter = LoRAOptions(cfg), o.Adapter
	} else {
		if o.Adapter != "" {
			return nil, errors.New("an adapter to continue needs lora.enabled: true")
		}
		opts.FullFT = true
	}
	var m *model.Model
	var err error
	if cfg.Model.Init == "random" {
		m, err = openRandom(cfg, be, opts)
	} else {
		m, err = model.Open(cfg.Model.Path, be, opts)
	}
	var ae *model.AdapterError
	if errors.As(err, &ae) && o.Adapter != "" {
		return nil, fmt.Errorf(`key "init.adapter": %w`, err)
	}
	if err != nil {
		return nil, fmt.Errorf(`key "model.path": %w`, err)
	}
	m.Dir = cfg.Model.Path
	return m, nil
}

// openRandom opens fresh weights for model.path's config.json
// (WriteRandomModel into a temporary directory, removed once Open has
// copied them to the backend).
func openRandom(cfg config.Config, be kernels.Backend, opts model.Options) (*model.Model, error) {
	tmp, err := os.MkdirTemp("", "argrl-init-")
	if err != nil {
		return nil, fmt.Errorf("model.init random: %w", err)
	}
	var m *model.Model
	if err = WriteRandomModel(cfg.Model.Path, tmp, cfg.Run.Seed); err == nil {
		m, err = model.Open(tmp, be, opts)
	}
	if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
		m.Close()
		return nil, fmt.Errorf("model.init random: %w", rerr)
	}
	return m, err
}

// WriteRandomModel writes into out a model directory for src's config.json
// (copied) with fresh weights seeded by seed, as Hugging Face's
// _init_weights makes them: every matrix and the embedding ~ N(0, σ²) with
// σ = initializer_range (default 0.02), RMSNorm weights 1, biases 0.
func WriteRandomModel(src, out string, seed int64) error {
	cfgPath := filepath.Join(src, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return fmt.Errorf("model.init random: %w", err)
	}
	mc, err := model.ParseConfig(raw, cfgPath)
	if err != nil {
		return err
	}
	var extra struct {
		InitRange *float64 `json:"initializer_range"`
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		return fmt.Errorf("model.init random: %s: %w", cfgPath, err)
	}
	std := 0.02
	if extra.InitRange != nil {
		std = *extra.InitRange
	}
	if !(std > 0) {
		return fmt.Errorf("model.init random: %s: initializer_range must be > 0, got %v", cfgPath, std)
	}
	specs, err := model.Specs(mc)
	if err != nil {
		return err
	}
	rng := batch.NewRNG(seed, "model-init")
	var ts []safetensors.Tensor
	for _, sp := range specs {
		n := 1
		for _, d := range sp.Shape {
			n *= d
		}
		v := make([]float32, n)
		switch {
		case strings.HasSuffix(sp.Name, "norm.weight"):
			for i := range v {
				v[i] = 1
			}
		case strings.HasSuffix(sp.Name, ".bias"):
		default:
			for i := range v {
				v[i] = float32(std * rng.NormFloat64())
			}
		}
		ts = append(ts, safetensors.FromFloat32(sp.Name, sp.Shape, v))
	}
	if err := os.MkdirAll(out, 0o777); err != nil {
		return fmt.Errorf("model.init random: %w", err)
	}
	if err := safetensors.WriteFile(filepath.Join(out, safetensors.SingleName), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("model.init random: %w", err)
	}
	if err := ckpt.WriteFileAtomic(filepath.Join(out, "config.json"), raw); err != nil {
		return fmt.Errorf("model.init random: %w", err)
	}
	return nil
}

// ModelParams are the trainable tensors a checkpoint's model files hold
// (the value head, saved by PPO itself, excluded).
func (s *Setup) ModelParams() []*model.Param {
	var out []*model.Param
	for _, p := range s.Model.Trainable() {
		if !strings.HasPrefix(p.Name, "value_head.") {
			out = append(out, p)
		}
	}
	return out
}

// TrainableParams are every trainable tensor (value head included).
func (s *Setup) TrainableParams() []*model.Param { return s.Model.Trainable() }

// tokenizerFiles are copied next to full fine-tuned weights.
var tokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json",
	"special_tokens_map.json", "vocab.json", "merges.txt"}

// SaveModel writes the trained model files into dir (see the file header).
func (s *Setup) SaveModel(dir string) error {
	if s.Model.HasAdapters() {
		a, err := s.Model.Adapter()
		if err != nil {
			return err
		}
		a.BaseModel = s.Config.Model.Path
		return model.ExportPEFT(dir, a, s.Model.Config)
	}
	if err := ckpt.WriteParams(s.Backend, filepath.Join(dir, safetensors.SingleName), s.ModelParams()); err != nil {
		return err
	}
	if err := copyFileAtomic(filepath.Join(s.Config.Model.Path, "config.json"), filepath.Join(dir, "config.json")); err != nil {
		return err
	}
	tokDir := filepath.Dir(s.Tokenizer.File())
	for _, f := range tokenizerFiles {
		err := copyFileAtomic(filepath.Join(tokDir, f), filepath.Join(dir, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// LoadModel restores the trained model files SaveModel wrote into dir.
func (s *Setup) LoadModel(dir string) error {
	if s.Model.HasAdapters() {
		return s.Model.ImportAdapter(dir)
	}
	return ckpt.ReadParams(s.Backend, filepath.Join(dir, safetensors.SingleName), s.ModelParams())
}

func copyFileAtomic(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return ckpt.WriteFileAtomic(dst, b)
}

// DebugTemplate writes the first training record as the model will see it:
// the rendered prompt and target, and the token counts (--debug-template).
func (s *Setup) DebugTemplate(w io.Writer) error {
	ds := s.Train
	if ds == nil {
		ds = s.Val
	}
	if ds == nil || len(ds.Examples) == 0 {
		return errors.New("debug template: no record to show")
	}
	ex := ds.Examples[0]
	text, err := chat.Debug(s.Template, *ex.Rec, s.Format)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "record %q of %s\n%s"+"tokens: %d (prompt %d, loss on %d target tokens); model.max_len %d\n",
		ex.Rec.ID, ds.Path, text, len(ex.IDs), ex.PromptLen, ex.Targets, s.MaxLen)
	return err
}

// RewardPackageConfig maps the run config onto the reward package's config,
// so validation metrics and RL rewards share one scorer (docs/contracts.md §3).
func RewardPackageConfig(cfg config.Config) reward.Config {
	rc := reward.DefaultConfig()
	rc.Format, rc.Judge = cfg.Format, cfg.Judge
	rc.RejectString, rc.ALCRequiredOnly, rc.NoTextScore = cfg.Reward.RejectString, cfg.Reward.ALCRequiredOnly, cfg.Reward.NoTextScore
	if cfg.Reward.ALCThreshold != 0 {
		rc.ALCThreshold = cfg.Reward.ALCThreshold
	}
	rc.JudgeHTTP, rc.Decomposed, rc.R2IF = cfg.Reward.JudgeHTTP, cfg.Reward.Decomposed, cfg.Reward.R2IF
	return rc
}

// ConfigHash is "sha256:<hex>" of the config's YAML without run.dir and
// the checkpoint and dist sections.
func ConfigHash(c config.Config) string {
	c.Run.Dir = ""
	c.Checkpoint = config.CheckpointConfig{}
	c.Dist = config.DistConfig{}
	b, err := yaml.Marshal(c)
	if err != nil { // a plain struct of scalars and lists always marshals
		return "sha256:?"
	}
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// WriteConfigYAML writes the resolved config atomically, reloadable by
// config.Load.
func WriteConfigYAML(path string, c config.Config) error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("run: %s: %w", path, err)
	}
	head := fmt.Sprintf("# train %s --config %s\n# The resolved config of this run: defaults, the config file, ARGRL_* and --set.\n", c.Algo, path)
	if err := ckpt.WriteFileAtomic(path, append([]byte(head), b...)); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}
