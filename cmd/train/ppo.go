package main

import "github.com/argrl/argrl/trainer"

// train ppo --config F [--set k=v]... [--resume | --resume-from step-NNNNNN] [--debug-template]
//
// PPO with a value head on the shared trunk (docs/contracts.md §5, trainer/ppo.go).
func init() {
	root.AddCommand(rlCommand("ppo", "PPO: one sampled response per prompt, a critic with GAE, batch whitening, β on argument tokens, KL to a reference",
		`PPO on model.path (or on the SFT adapter init.adapter): each step samples
optim.batch_size × optim.grad_accum prompts of data.train and rolls out one
response each (T 0.6, top-p 0.95), scores it with reward.name, estimates
advantages with GAE(ppo.gamma, ppo.lambda) from a value head on the
policy's last hidden state (the terminal reward on the last token),
whitens them over the batch, multiplies them by token_weight.beta on the
tokens of argument values, and updates LoRA and the value head with the
clipped surrogate, kl.coef times the KL to the reference and ppo.vf_coef
times the clipped value loss, for ppo.epochs passes over mini-batches.
Checkpoints include value_head.safetensors.

Kill it at any moment and continue with --resume: the continuation is
bit-identical to a run that never stopped.`, trainer.PPO))
}
