package model

// The blocks every supported decoder shares, as runtime modules: their
// tagged fields are the device tensors, their methods the forward pass over
// ops (ops.go). Architectures embed them in their layer structs and add
// their own tensors (biases, q/k norms) and steps.
//
// One layer (pre-norm residual, as in Hugging Face):
//
//	h   = x + O·attn(RoPE(Q·n1(x)), RoPE(K·n1(x)), V·n1(x))      n1 = AttnNorm
//	out = h + Down·(silu(Gate·n2(h)) ⊙ Up·n2(h))                 n2 = MLPNorm
//
// with n(x) = x / sqrt(mean(x²) + rms_norm_eps) ⊙ w.
//
// Tags (read by weights.go; the only place checkpoint names are spelled):
//
//	st:"model.layers.%d.self_attn.q_proj"   checkpoint name; for a *Linear the
//	                                        module path (its weight is path + ".weight")
//	shape:"Hq*D,C"                          expected shape over V, C, F, Hq, Hkv, D
//	tied:"model.embed_tokens.weight"        with tie_word_embeddings, share that tensor
//
// Layers live in a slice field tagged st:"layers".

// Linear is one linear layer y = x·Wᵀ, with a LoRA branch when an adapter
// targets it.
type Linear struct {
	W    *Param    // [out, in]
	Path string    // module path, e.g. "model.layers.0.self_attn.q_proj"
	lora *loraPair // nil when not targeted
}

// Attention holds one layer's attention projections (Linear layout [out, in]).
type Attention struct {
	AttnNorm *Param  `st:"model.layers.%d.input_layernorm.weight" shape:"C"` // [C]
	Q        *Linear `st:"model.layers.%d.self_attn.q_proj" shape:"Hq*D,C"`  // [Hq·D, C]
	K        *Linear `st:"model.layers.%d.self_attn.k_proj" shape:"Hkv*D,C"` // [Hkv·D, C]
	V        *Linear `st:"model.layers.%d.self_attn.v_proj" shape:"Hkv*D,C"` // [Hkv·D, C]
	O        *Linear `st:"model.layers.%d.self_attn.o_proj" shape:"C,Hq*D"`  // [C, Hq·D]

	qkv *fusedLinear // Q, K and V as one GEMM (fused.go), or nil
}

// project is the attention pre-norm and the q, k and v projections of x.
func (a *Attention) project(o ops, x act) (q, k, v act) { return a.projectBias(o, x, nil, nil, nil) }

// projectBias is project plus biases bq, bk, bv (nil: none) added to each
// projection after its LoRA branch, or by the fused GEMM when it carries
// them (fused.go).
func (a *Attention) projectBias(o ops, x act, bq, bk, bv *Param) (q, k, v act) {
	h := o.preNorm(x, a.AttnNorm)
	if p := o.fused(h, a.qkv); p != nil {
		if a.qkv.bias != nil {
			return p[0], p[1], p[2]
		}
		q, k, v = p[0], p[1], p[2]
	} else {
		q, k, v = o.linear(h, a.Q), o.linear(h, a.K), o.linear(h, a.V)
	}
	if bq != nil {
		q, k, v = o.addBias(q, bq), o.addBias(k, bk), o.addBias(v, bv)
	}
	return q, k, v
}

// attend is the rest of the attention half: RoPE on q and k, attention over
// the layer's keys and values, the output projection and the residual.
func (a *Attention) attend(o ops, x, q, k, v act, layer int) act {
	att := o.attention(o.rope(q), o.rope(k), v, layer)
	return o.add(x, o.linear(att, a.O))
}

// MLP holds one layer's SiLU-gated feed-forward block.
type MLP struct {
	MLPNorm *Param  `st:"model.layers.%d.post_attention_layernorm.weight" shape:"C"` // [C]
	Gate    *Linear `st:"model.layers.%d.mlp.gate_proj" shape:"F,C"`                 // [F, C]
	Up      *Linear `st:"model.layers.%d.mlp.up_proj" shape:"F,C"`                   // [F, C]
	Down    *Linear `st:"model.layers.%d.mlp.down_proj" shape:"C,F"`                 // [C, F]

	gateUp *fusedLinear // Gate and Up as one GEMM (fused.go), or nil
}

// forward is the MLP half of a layer, residual included.
func (m *MLP) forward(o ops, x act) act {
	h := o.preNorm(x, m.MLPNorm)
	var gate, up act
	if p := o.fused(h, m.gateUp); p != nil {
		gate, up = p[0], p[1]
	} else {
		gate, up = o.linear(h, m.Gate), o.linear(h, m.Up)
	}
	s := o.swiGLU(gate, up)
	return o.add(x, o.linear(s, m.Down))
}

// Head holds the embedding, the final norm and the output projection.
type Head struct {
	Embed  *Param `st:"model.embed_tokens.weight" shape:"V,C"`                       // [V, C]
	Norm   *Param `st:"model.norm.weight" shape:"C"`                                 // [C]
	LMHead *Param `st:"lm_head.weight" shape:"V,C" tied:"model.embed_tokens.weight"` // [V, C]; == Embed when tied
}

func (h *Head) head() *Head { return h }
