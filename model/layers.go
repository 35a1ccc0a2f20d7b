package model

// The blocks every supported decoder shares. Architectures embed them in
// their layer structs and add their own tensors (biases, q/k norms).
//
// One layer (pre-norm residual, as in Hugging Face):
//
//	h   = x + O·attn(RoPE(Q·n1(x)), RoPE(K·n1(x)), V·n1(x))      n1 = AttnNorm
//	out = h + Down·(silu(Gate·n2(h)) ⊙ Up·n2(h))                 n2 = MLPNorm
//
// with n(x) = x / sqrt(mean(x²) + rms_norm_eps) ⊙ w.

// Attention holds one layer's attention projections (Linear layout [out, in]).
type Attention struct {
	AttnNorm *Tensor `st:"model.layers.%d.input_layernorm.weight" shape:"C"`        // [C]
	Q        *Tensor `st:"model.layers.%d.self_attn.q_proj.weight" shape:"Hq*D,C"`  // [Hq·D, C]
	K        *Tensor `st:"model.layers.%d.self_attn.k_proj.weight" shape:"Hkv*D,C"` // [Hkv·D, C]
	V        *Tensor `st:"model.layers.%d.self_attn.v_proj.weight" shape:"Hkv*D,C"` // [Hkv·D, C]
	O        *Tensor `st:"model.layers.%d.self_attn.o_proj.weight" shape:"C,Hq*D"`  // [C, Hq·D]
}

// MLP holds one layer's SiLU-gated feed-forward block.
type MLP struct {
	MLPNorm *Tensor `st:"model.layers.%d.post_attention_layernorm.weight" shape:"C"` // [C]
	Gate    *Tensor `st:"model.layers.%d.mlp.gate_proj.weight" shape:"F,C"`          // [F, C]
	Up      *Tensor `st:"model.layers.%d.mlp.up_proj.weight" shape:"F,C"`            // [F, C]
	Down    *Tensor `st:"model.layers.%d.mlp.down_proj.weight" shape:"C,F"`          // [C, F]
}

// Head holds the embedding, the final norm and the output projection.
type Head struct {
	Embed  *Tensor `st:"model.embed_tokens.weight" shape:"V,C"`                       // [V, C]
	Norm   *Tensor `st:"model.norm.weight" shape:"C"`                                 // [C]
	LMHead *Tensor `st:"lm_head.weight" shape:"V,C" tied:"model.embed_tokens.weight"` // [V, C]; == Embed when tied
}
