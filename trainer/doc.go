// Package trainer holds argrl's training recipes, SFT (sft.go), GRPO
// (grpo.go) and PPO (ppo.go), each reading top to bottom, on one scaffold
// (run.go: opening a run directory, the single restore and the single
// save) and one setup (setup.go: model, tokenizer, data, rewards). The
// pieces they call live in subpackages: config, ckpt, optim, batch,
// metrics and rl. Each recipe also runs data-parallel on the ranks of a
// dist.Comm (team.go: the split of a step, the reductions, the failures).
// GRPO and PPO roll out multi-turn episodes with tool execution when
// rollout.max_turns > 1 (episodes.go). See docs/design.md for a GRPO step
// end to end.
package trainer
