// Package config is a training run's configuration: the Config struct with
// every key's default (Default), strict loading from a YAML file, ARGRL_*
// environment variables and --set flags (Load, load.go), and the checks a
// type cannot express (Validate, ValidateRL). Key names follow
// docs/contracts.md §5–§8.
package config

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/env"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/reward/judge"
	"github.com/argrl/argrl/trainer/ckpt"
)

// Config is the whole run configuration. Every key has its default in
// Default(); a YAML file only overrides. Key names follow docs/contracts.md §5–§8.
type Config struct {
	Algo      string `yaml:"algo"`       // sft | grpo | ppo (set by the subcommand)
	Format    string `yaml:"format"`     // output format: tool_call | pythonic | reason_tool
	Judge     string `yaml:"judge"`      // language judge: builtin | http
	LossAgg   string `yaml:"loss_agg"`   // token-mean | seq-mean-token-mean | seq-mean-token-sum-norm
	EvalEvery int    `yaml:"eval_every"` // validation every N optimizer steps (0: only at the end)
	// IsLevel is where the importance ratio lives (docs/contracts.md §5):
	// token (ρ_t = π/π_old per token, clipped per token: PPO, GRPO) or
	// sequence (GSPO: one ratio per response, exp of the mean token
	// log-ratio, clipped as a whole; GSPO's paper pairs it with loss_agg
	// seq-mean-token-mean and a clip range of a few 1e-4).
	IsLevel string `yaml:"is_level"`

	Run         RunConfig         `yaml:"run"`
	Model       ModelConfig       `yaml:"model"`
	Data        DataConfig        `yaml:"data"`
	LoRA        LoRAConfig        `yaml:"lora"`
	Optim       OptimConfig       `yaml:"optim"`
	Rollout     RolloutConfig     `yaml:"rollout"`
	Reward      RewardConfig      `yaml:"reward"`
	TokenWeight TokenWeightConfig `yaml:"token_weight"`
	KL          KLConfig          `yaml:"kl"`
	Ref         RefConfig         `yaml:"ref"`
	Adv         AdvConfig         `yaml:"adv"`
	Clip        ClipConfig        `yaml:"clip"`
	PPO         PPOConfig         `yaml:"ppo"`
	// DAPO's dynamic sampling and overlong shaping, and the rollout/training
	// mismatch correction (docs/contracts.md §5).
	DynamicSampling DynamicSamplingConfig `yaml:"dynamic_sampling"`
	Overlong        OverlongConfig        `yaml:"overlong"`
	TIS             TISConfig             `yaml:"tis"`
	Init            InitConfig            `yaml:"init"`
	Checkpoint      CheckpointConfig      `yaml:"checkpoint"`
	Dist            DistConfig            `yaml:"dist"`

	// origins says where Load found each key it did not leave at its
	// default ("FILE:LINE", "--set KEY", "ARGRL_…"; nil: none), and file
	// is the config file's name: Validate's errors blame them.
	origins map[string]string
	file    string
}

// RunConfig names the run directory and its seed.
type RunConfig struct {
	Dir  string `yaml:"dir"`  // RUN directory (config.yaml, metrics.jsonl, checkpoints/)
	Seed int64  `yaml:"seed"` // master seed: data order, LoRA init, dropout, sampling
}

// ModelConfig points at a Hugging Face model directory.
type ModelConfig struct {
	Path     string `yaml:"path"`     // directory with config.json, *.safetensors, tokenizer.json
	Template string `yaml:"template"` // chat template; "" picks it from the model family
	Backend  string `yaml:"backend"`  // kernels backend: auto (cuda when the binary has it and a GPU answers, else cpu) | cpu | cuda
	MaxLen   int    `yaml:"max_len"`  // longest prompt+response in tokens
	// Init is pretrained (the weights in path) or random: fresh weights
	// for path's config.json, seeded by run.seed, as Hugging Face
	// initializes them (normal(0, initializer_range) matrices, unit norms,
	// zero biases): the demo's base model trained from scratch.
	Init string `yaml:"init"`
	// Tokenizer is a tokenizer.json file or a directory holding one
	// ("" = path).
	Tokenizer string `yaml:"tokenizer"`
	// System is the system prompt of records without one ("" = the chat
	// template's default).
	System string `yaml:"system"`
	// Compute is the matmul arithmetic: f32, bf16 (weights and
	// activations rounded to bfloat16, float32 sums, as PyTorch's bf16
	// autocast) where the backend has bf16 products (a CPU with
	// AVX512-BF16; elsewhere bf16 computes as f32), or auto (the default):
	// bf16 where the backend has bf16 products, f32 elsewhere.
	Compute string `yaml:"compute"`
	// Recompute is what training recomputes instead of keeping between
	// the forward and the backward pass: none, or layer (only each
	// decoder layer's input is kept and the layer's forward runs again
	// before its backward; the same gradients bit for bit, for about one
	// more forward pass of time).
	Recompute string `yaml:"recompute"`
}

// DataConfig names the JSONL files (docs/contracts.md §1).
type DataConfig struct {
	Train string `yaml:"train"`
	Val   string `yaml:"val"`
	Test  string `yaml:"test"`
	// TrainSplit, ValSplit and TestSplit select the records of train, val
	// and test by their "split" field (train, validation or test; "" for
	// none), as a "#split=NAME" suffix on the path does. A file whose
	// records carry a split is refused without a selection (data.ReadTraining).
	TrainSplit string `yaml:"train_split"`
	ValSplit   string `yaml:"val_split"`
	TestSplit  string `yaml:"test_split"`
	// ValMax caps the validation records scored at each evaluation (0: all).
	ValMax int `yaml:"val_max"`
	// BucketWindow: records are sorted by length within windows of this
	// many optimizer steps' worth of records, so micro-batches pad little
	// (0 or 1: plain shuffle; 64 is close to HF's group_by_length mega-batch
	// of 50). See trainer/batch.
	BucketWindow int `yaml:"bucket_window"`
	// Packing lays each micro-batch's sequences end to end in one row
	// (model.Options.Pack: no padding; per-token results those of one row
	// each) instead of one right-padded row per sequence. false: today's
	// padded rows, byte for byte.
	Packing bool `yaml:"packing"`
}

// LoRAConfig: W x + (α/r)·B A x on the target linear layers.
type LoRAConfig struct {
	Enabled bool     `yaml:"enabled"` // false: full fine-tuning
	R       int      `yaml:"r"`
	Alpha   float64  `yaml:"alpha"`
	Dropout float64  `yaml:"dropout"`
	Targets []string `yaml:"targets"` // subset of q,k,v,o,gate,up,down (HF *_proj names also accepted)
}

// OptimConfig: AdamW with cosine schedule and linear warm-up.
type OptimConfig struct {
	LR          float64 `yaml:"lr"`
	Beta1       float64 `yaml:"beta1"`
	Beta2       float64 `yaml:"beta2"`
	Eps         float64 `yaml:"eps"`
	WeightDecay float64 `yaml:"weight_decay"`
	WarmupRatio float64 `yaml:"warmup_ratio"` // fraction of total steps
	Schedule    string  `yaml:"schedule"`     // cosine | constant | linear
	MinLRRatio  float64 `yaml:"min_lr_ratio"` // floor of the decay, as a fraction of lr
	GradClip    float64 `yaml:"grad_clip"`    // max global grad norm (0: off)
	BatchSize   int     `yaml:"batch_size"`   // sequences (SFT) or prompts (RL) per micro-batch
	GradAccum   int     `yaml:"grad_accum"`   // micro-batches per optimizer step
	Epochs      int     `yaml:"epochs"`
	MaxSteps    int     `yaml:"max_steps"` // 0: run the epochs
	// MicroTokens > 0 bounds each micro-batch by the tokens its graph
	// computes (padding included) instead of batch_size rows, and deals
	// the step's sequences to the data-parallel shares by tokens
	// (trainer/batch tokens.go). A step covers the same records and
	// normalizes its loss alike. 0: batch_size rows. At least model.max_len.
	MicroTokens int `yaml:"micro_tokens"`
}

// RolloutConfig: sampling for GRPO/PPO (docs/contracts.md §5) and evaluation.
type RolloutConfig struct {
	G            int      `yaml:"g"` // samples per prompt (PPO uses 1)
	Temperature  float64  `yaml:"temperature"`
	TopP         float64  `yaml:"top_p"`
	TopK         int      `yaml:"top_k"`
	MaxNewTokens int      `yaml:"max_new_tokens"`
	Stop         []string `yaml:"stop"` // extra stop strings
	// MaxTurns > 1 makes the RL rollouts multi-turn (docs/contracts.md §1
	// turns and env, §5): the environment Env executes each assistant
	// turn's calls, its tool messages go back into the conversation and
	// generation continues, until a turn makes no call or MaxTurns turns
	// were taken; max_new_tokens applies to each turn. 1: one turn.
	MaxTurns int `yaml:"max_turns"`
	// Env executes the calls of multi-turn rollouts: name synth (the
	// synthetic benchmark's APIs, simulated from the record's env.seed),
	// bfcl (BFCL's multi-turn classes argrl simulates) or http (your own
	// server: url, and timeout_s per request, 0: 30).
	Env env.Config `yaml:"env"`
	// MaxEnvTokens caps the tokens one environment step adds between two
	// assistant turns (the tool messages and the chat template's glue); a
	// longer answer ends the episode (finish "context").
	MaxEnvTokens int `yaml:"max_env_tokens"`
}

// RewardConfig selects a reward model by name (docs/contracts.md §4) and carries
// the reward package's settings (reward.Config; format and judge are the
// top-level keys). Zero values take the reward package's defaults.
type RewardConfig struct {
	Name            string                  `yaml:"name"`              // rm1 | rm2 | rm3 | decomposed | binary | r2if | bfcl
	RejectString    string                  `yaml:"reject_string"`     // no-call answer ("" = format.DefaultRejectString)
	ALCThreshold    float64                 `yaml:"alc_threshold"`     // ALC passes at ALC_cont ≥ this, RM-2 scale (0 = 1.8)
	ALCRequiredOnly bool                    `yaml:"alc_required_only"` // judge only schema-required textual arguments
	NoTextScore     float64                 `yaml:"no_text_score"`     // ALC_cont of a turn without textual arguments (0 = top of scale)
	JudgeHTTP       judge.HTTPConfig        `yaml:"judge_http"`        // judge: http endpoint
	Decomposed      reward.DecomposedConfig `yaml:"decomposed"`        // paper 001's weights (zero = defaults)
	R2IF            reward.R2IFConfig       `yaml:"r2if"`              // R2IF weights, K, similarity (zero = defaults)
	Student         StudentConfig           `yaml:"student"`           // r2if's CER student model
	// Trajectory scores multi-turn rollouts (rollout.max_turns > 1):
	// turn_weight × the mean of reward.name over the episode's turns, each
	// against its gold turn, + state_weight × the match of the
	// environment's final state with the gold's (reward/trajectory.go).
	Trajectory reward.TrajectoryConfig `yaml:"trajectory"`
}

// StudentConfig is R2IF's CER student (papers 002/003): the rollout engine
// on this checkpoint samples reward.r2if.k continuations.
type StudentConfig struct {
	Path      string `yaml:"path"`      // model directory ("" = model.path, the frozen base with LoRA off)
	Adapter   string `yaml:"adapter"`   // optional PEFT adapter for the student
	Tokenizer string `yaml:"tokenizer"` // the student's tokenizer ("" = path)
	Template  string `yaml:"template"`  // the student's chat template ("" = its model family)
}

// TokenWeightConfig: w_t = β on argument-value tokens, 1 elsewhere.
type TokenWeightConfig struct {
	Beta float64 `yaml:"beta"`
}

// KLConfig: KL to the reference in the loss.
type KLConfig struct {
	Coef      float64 `yaml:"coef"`
	Estimator string  `yaml:"estimator"` // k1 | k2 | k3
}

// RefConfig: the frozen reference policy.
type RefConfig struct {
	Path        string `yaml:"path"`         // "" = the base with LoRA switched off
	UpdateEvery int    `yaml:"update_every"` // N > 0: lagged copy of the policy every N steps
}

// AdvConfig: GRPO's advantages (PPO's come from its critic; docs/contracts.md §5).
type AdvConfig struct {
	NormByStd bool    `yaml:"norm_by_std"` // grpo: divide by the group's std (false: Dr.GRPO)
	Delta     float64 `yaml:"delta"`       // grpo: A = (r − mean)/(std + delta)
	// Estimator is the baseline: grpo (the group mean, and its std with
	// norm_by_std), rloo (the mean of the group's other G−1 rewards, no
	// std) or reinforce++ (no group baseline: the rewards whitened over
	// every response token of the step, as verl's REINFORCE++).
	Estimator string `yaml:"estimator"`
	// PerPart (grpo only, G ≥ 2) normalizes each additive term of the
	// reward (reward.Result.Terms: rm*'s gate and args, decomposed's
	// weighted parts, r2if's binary/cer/smv) within its group, sums the
	// terms' advantages, and divides the sums by their std over the
	// step's rollouts (GDPO; TRL's normalize_then_sum).
	PerPart bool `yaml:"per_part"`
}

// ClipConfig: PPO-style ratio clipping bounds.
type ClipConfig struct {
	EpsLow  float64 `yaml:"eps_low"`
	EpsHigh float64 `yaml:"eps_high"`
}

// PPOConfig: passes over each rollout batch, and the critic.
type PPOConfig struct {
	Epochs    int     `yaml:"epochs"`     // ppo_epochs: passes over the rollout batch (GRPO too)
	MiniBatch int     `yaml:"mini_batch"` // sequences per mini-batch (0: whole batch)
	Gamma     float64 `yaml:"gamma"`
	Lambda    float64 `yaml:"lambda"`
	VfCoef    float64 `yaml:"vf_coef"`
	ValueClip float64 `yaml:"value_clip"`
}

// DynamicSamplingConfig: DAPO's dynamic sampling (GRPO only). A group
// whose G rewards are all equal has no advantage; with Enabled it is
// dropped, and the step rolls out further batches of prompts (the
// Batcher's next step groups, so a resumed run draws the same ones) until
// it holds optim.batch_size × optim.grad_accum informative groups or has
// rolled out MaxBatches batches; it trains on the first groups kept, at
// most a full step's (none kept: no update that step).
type DynamicSamplingConfig struct {
	Enabled    bool `yaml:"enabled"`
	MaxBatches int  `yaml:"max_batches"` // rollout batches per step at most, the first included (≥ 1)
}

// OverlongConfig: what to do with responses that reach
// rollout.max_new_tokens L (DAPO). none: nothing; filter: a response cut
// off without a stop (the truncated_frac ones) is left out of the loss,
// its reward still in its group's baseline; penalty: DAPO's soft length
// penalty is added to every reward, 0 up to L − Buffer tokens, then
// falling linearly to −Penalty at L tokens.
type OverlongConfig struct {
	Mode    string  `yaml:"mode"`    // none | filter | penalty
	Buffer  int     `yaml:"buffer"`  // penalty: the last Buffer tokens before L are penalized (1 … L)
	Penalty float64 `yaml:"penalty"` // penalty: the penalty at L tokens (≥ 0)
}

// TISConfig: truncated importance sampling against a rollout/training
// mismatch. With Cap > 0, π_old is no longer the sampler's log-probs but
// those of the training forward on the rolled-out tokens, before the
// step's first update, and each token's surrogate is weighted by
// min(π_old/π_rollout, Cap). On the CPU backend the two agree bit for bit
// (docs/design.md), so the weights are 1; a backend whose sampler rounds
// differently (cuda-bf16tc) needs it.
type TISConfig struct {
	Cap float64 `yaml:"cap"` // 0: off; else ≥ 1
}

// InitConfig: start RL from an SFT adapter.
type InitConfig struct {
	Adapter string `yaml:"adapter"` // e.g. RUN/best
	Merge   bool   `yaml:"merge"`   // merge into the weights (true) or keep it trainable
}

// CheckpointConfig: docs/contracts.md §7.
type CheckpointConfig struct {
	Every    int `yaml:"every"`     // optimizer steps between checkpoints
	KeepLast int `yaml:"keep_last"` // 0: keep all; best/ is never deleted
	// ResumeFrom names the checkpoint --resume continues from, e.g.
	// step-000100 ("" = the one RUN/checkpoints/latest names).
	ResumeFrom string `yaml:"resume_from"`
	// Fallback lets --resume skip a corrupt or partial checkpoint and use
	// the newest older complete one (false: refuse with an error).
	Fallback bool `yaml:"fallback"`
	// BestMetric is the eval metric (higher is better) that selects RUN/best.
	BestMetric string `yaml:"best_metric"`
	// BestMinVal is the fewest validation records (data.val, capped by
	// data.val_max) RUN/best may be chosen on; a run with fewer is refused
	// before training (0: no floor; trainer/best.go).
	BestMinVal int `yaml:"best_min_val"`
}

// DistConfig: data-parallel training (mpirun or srun -n N bin/train-mpi;
// docs/design.md, "Data parallelism"). A run on one process ignores
// timeout_s and reads shares.
type DistConfig struct {
	// Shares is the number of parts each step's work is dealt into and
	// whose gradients are summed one after the other, a part at a time
	// (0: one per rank). It must be a multiple of the rank count. One
	// process with shares: N sums exactly as N ranks do, so its weights
	// are byte-identical to theirs (and a checkpoint of N ranks continues
	// bit for bit on one).
	Shares int `yaml:"shares"`
	// TimeoutS bounds every collective (seconds): how long a rank may wait
	// for the slowest one (an evaluation or a checkpoint that rank 0 alone
	// writes included) before the job is aborted.
	TimeoutS float64 `yaml:"timeout_s"`
}

// Default returns every key's default (docs/contracts.md §5–§6, paper 001's SFT
// hyper-parameters, paper 000's sampling).
func Default() Config {
	return Config{
		Algo: "sft", Format: "tool_call", Judge: "builtin", LossAgg: "token-mean", EvalEvery: 50, IsLevel: "token",
		Run:   RunConfig{Dir: "runs/default", Seed: 1},
		Model: ModelConfig{Backend: "auto", MaxLen: 2048, Init: "pretrained", Compute: "auto", Recompute: "none"},
		Data:  DataConfig{BucketWindow: 64, Packing: true},
		LoRA: LoRAConfig{Enabled: true, R: 32, Alpha: 64, Dropout: 0.05,
			Targets: []string{"q", "k", "v", "o", "gate", "up", "down"}},
		Optim: OptimConfig{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.0,
			WarmupRatio: 0.05, Schedule: "cosine", GradClip: 1.0, BatchSize: 8, GradAccum: 1, Epochs: 2},
		Rollout: RolloutConfig{G: 8, Temperature: 0.6, TopP: 0.95, MaxNewTokens: 512,
			MaxTurns: 1, Env: env.Config{Name: "synth"}, MaxEnvTokens: 512},
		Reward: RewardConfig{Name: "rm3", ALCThreshold: reward.DefaultConfig().ALCThreshold,
			Decomposed: reward.DefaultConfig().Decomposed, R2IF: reward.DefaultConfig().R2IF,
			Trajectory: reward.DefaultTrajectoryConfig()},
		TokenWeight:     TokenWeightConfig{Beta: 1},
		KL:              KLConfig{Coef: 0.001, Estimator: "k3"},
		Adv:             AdvConfig{NormByStd: true, Delta: 1e-6, Estimator: "grpo"},
		Clip:            ClipConfig{EpsLow: 0.2, EpsHigh: 0.2},
		PPO:             PPOConfig{Epochs: 1, Gamma: 1.0, Lambda: 0.95, VfCoef: 0.5, ValueClip: 0.2},
		Checkpoint:      CheckpointConfig{Every: 100, KeepLast: 3, BestMetric: "fcm"},
		DynamicSampling: DynamicSamplingConfig{MaxBatches: 4},
		Overlong:        OverlongConfig{Mode: "none", Buffer: 64, Penalty: 1},
		Dist:            DistConfig{TimeoutS: 600},
	}
}

// Load returns Default() overridden by the file, ARGRL_* env and sets, then
// the LoRA shape of a trainable init.adapter (adapter.go), then validated.
// An invalid value is blamed on the source that gave it: FILE:LINE, the
// --set flag or the ARGRL_ variable.
func Load(path string, sets []string) (Config, error) {
	c, _, err := load(path, sets)
	return c, err
}

// load is Load, also returning where each key came from (loadInto).
func load(path string, sets []string) (Config, map[string]string, error) {
	var src []byte
	if path != "" {
		var err error
		if src, err = os.ReadFile(path); err != nil {
			return Default(), nil, fmt.Errorf("config: %w", err)
		}
		if src == nil {
			src = []byte{}
		}
	}
	return loadSource(path, src, sets, true)
}

// loadSource is load from YAML bytes named name (nil: none), with or
// without the ARGRL_ environment.
func loadSource(name string, src []byte, sets []string, env bool) (Config, map[string]string, error) {
	c := Default()
	origins, err := loadInto(&c, name, src, sets, env)
	if err != nil {
		return c, nil, err
	}
	if len(origins) > 0 {
		c.origins = origins
	}
	c.file = name
	if err := c.adoptAdapter(); err != nil {
		return c, nil, err
	}
	if err := c.Validate(); err != nil {
		return c, nil, err
	}
	return c, origins, nil
}

// Validate checks values that a type cannot express, naming the key and
// listing the valid choices.
func (c *Config) Validate() error {
	var errs []string
	oneOf := func(key, v string, valid ...string) {
		for _, s := range valid {
			if v == s {
				return
			}
		}
		errs = append(errs, fmt.Sprintf("key %q: %q is not one of %s", key, v, strings.Join(valid, ", ")))
	}
	positive := func(key string, v float64) {
		if !(v > 0) {
			errs = append(errs, fmt.Sprintf("key %q: must be > 0, got %v", key, v))
		}
	}
	oneOf("algo", c.Algo, "sft", "grpo", "ppo")
	oneOf("format", c.Format, "tool_call", "pythonic", "reason_tool")
	oneOf("judge", c.Judge, "builtin", "http")
	oneOf("loss_agg", c.LossAgg, "token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
	oneOf("reward.name", c.Reward.Name, "rm1", "rm2", "rm3", "decomposed", "binary", "r2if", "bfcl")
	oneOf("kl.estimator", c.KL.Estimator, "k1", "k2", "k3")
	oneOf("optim.schedule", c.Optim.Schedule, "cosine", "constant", "linear")
	oneOf("model.init", c.Model.Init, "pretrained", "random")
	oneOf("is_level", c.IsLevel, "token", "sequence")
	oneOf("adv.estimator", c.Adv.Estimator, "grpo", "rloo", "reinforce++")
	oneOf("overlong.mode", c.Overlong.Mode, "none", "filter", "penalty")
	oneOf("rollout.env.name", c.Rollout.Env.Name, "synth", "bfcl", "http")
	oneOf("model.compute", c.Model.Compute, "auto", "f32", "bf16")
	oneOf("model.recompute", c.Model.Recompute, "none", "layer")
	positive("token_weight.beta", c.TokenWeight.Beta)
	positive("optim.lr", c.Optim.LR)
	if c.LoRA.Enabled {
		positive("lora.r", float64(c.LoRA.R))
		positive("lora.alpha", c.LoRA.Alpha)
		if c.LoRA.Dropout < 0 || c.LoRA.Dropout >= 1 {
			errs = append(errs, fmt.Sprintf("key \"lora.dropout\": must be in [0,1), got %v", c.LoRA.Dropout))
		}
		if len(c.LoRA.Targets) == 0 {
			errs = append(errs, "key \"lora.targets\": empty; name the layers to adapt, e.g. [q, k, v, o, gate, up, down]")
		}
		for _, t := range c.LoRA.Targets {
			if !slices.Contains(model.AllTargets, LoRATarget(t)) {
				errs = append(errs, fmt.Sprintf("key \"lora.targets\": unknown target %q (valid: q, k, v, o, gate, up, down, or the same with _proj)", t))
			}
		}
	}
	if c.Optim.BatchSize < 1 || c.Optim.GradAccum < 1 {
		errs = append(errs, "keys \"optim.batch_size\" and \"optim.grad_accum\" must be ≥ 1")
	}
	if c.Optim.MicroTokens < 0 || (c.Optim.MicroTokens > 0 && c.Optim.MicroTokens < c.Model.MaxLen) {
		errs = append(errs, fmt.Sprintf("key \"optim.micro_tokens\": %d: must be 0 (micro-batches of optim.batch_size) or at least model.max_len = %d, so that every sequence fits", c.Optim.MicroTokens, c.Model.MaxLen))
	}
	if c.Rollout.G < 1 {
		errs = append(errs, fmt.Sprintf("key \"rollout.g\": must be ≥ 1, got %d", c.Rollout.G))
	}
	if c.Rollout.TopP <= 0 || c.Rollout.TopP > 1 {
		errs = append(errs, fmt.Sprintf("key \"rollout.top_p\": must be in (0,1], got %v", c.Rollout.TopP))
	}
	if c.Rollout.Temperature < 0 {
		errs = append(errs, fmt.Sprintf("key \"rollout.temperature\": must be ≥ 0, got %v", c.Rollout.Temperature))
	}
	if c.Rollout.MaxTurns < 1 || c.Rollout.MaxEnvTokens < 1 {
		errs = append(errs, fmt.Sprintf("keys \"rollout.max_turns\" (1: one turn) and \"rollout.max_env_tokens\" must be ≥ 1, got %d and %d",
			c.Rollout.MaxTurns, c.Rollout.MaxEnvTokens))
	}
	if c.Clip.EpsLow < 0 || c.Clip.EpsHigh < 0 {
		errs = append(errs, "keys \"clip.eps_low\"/\"clip.eps_high\" must be ≥ 0")
	}
	if c.Checkpoint.Every < 0 || c.Checkpoint.KeepLast < 0 || c.Data.BucketWindow < 0 {
		errs = append(errs, "keys \"checkpoint.every\", \"checkpoint.keep_last\" and \"data.bucket_window\" must be ≥ 0")
	}
	if c.Checkpoint.BestMinVal < 0 {
		errs = append(errs, fmt.Sprintf("key \"checkpoint.best_min_val\": must be ≥ 0, got %d", c.Checkpoint.BestMinVal))
	}
	for i, v := range []string{c.Data.TrainSplit, c.Data.ValSplit, c.Data.TestSplit} {
		if v != "" && !slices.Contains(data.Splits, v) {
			key := []string{"data.train_split", "data.val_split", "data.test_split"}[i]
			errs = append(errs, fmt.Sprintf("key %q: must be train, validation or test (or empty), got %q", key, v))
		}
	}
	if c.Dist.Shares < 0 || !(c.Dist.TimeoutS > 0) {
		errs = append(errs, fmt.Sprintf("keys \"dist.shares\" (≥ 0, 0: one per rank) and \"dist.timeout_s\" (> 0): got %d and %v", c.Dist.Shares, c.Dist.TimeoutS))
	}
	if r := c.Checkpoint.ResumeFrom; r != "" {
		if _, ok := ckpt.ParseStepName(r); !ok {
			errs = append(errs, fmt.Sprintf("key \"checkpoint.resume_from\": %q is not a checkpoint name like step-000100", r))
		}
	}
	if len(errs) > 0 {
		return blame(fmt.Errorf("invalid config: %s", strings.Join(errs, "; ")), c.file, c.origins)
	}
	return nil
}

// LoRATarget is the Hugging Face module name of a lora.targets entry:
// "q" → "q_proj" ("q_proj" stays).
func LoRATarget(t string) string {
	if strings.HasSuffix(t, "_proj") {
		return t
	}
	return t + "_proj"
}

// TotalSteps is the run's optimizer steps: optim.max_steps when set, else
// optim.epochs × stepsPerEpoch.
func (c OptimConfig) TotalSteps(stepsPerEpoch int) int {
	if c.MaxSteps > 0 {
		return c.MaxSteps
	}
	return c.Epochs * stepsPerEpoch
}
