// Package graph runs Gorgonia expression graphs on a kernels.Backend.
//
// Models are written as gorgonia graphs of this package's ops (each wraps
// Backend kernels and has a SymDiff), differentiated by gorgonia.Grad, and
// executed by Compile's Executor, which walks the sorted graph, runs each
// node as Backend calls over buffers planned from liveness, and never uses
// Gorgonia's VMs (whose CUDA mode does not build). Each op's Do runs the
// same kernels on the CPU backend, so gorgonia.NewTapeMachine runs the same
// graph as an oracle.
//
// Shape legend: B rows, T tokens per row, N = B·T, C channels, Hq/Hkv
// query/key-value heads, D head dim, F MLP size, V vocabulary.
//
// Ops: Linear (x·Wᵀ), MatMul (transposes, batched), AddBias, Embedding,
// RMSNorm (also per head: w [D] over x [N, H·D]), RoPE, Attention (causal,
// GQA, right padding), SwiGLU, AXPBY/Add/Scale, ScaleVar (run-time scale),
// Mul, Dropout, LogProbs (+ entropy), Dot, Reshape. Integer side inputs
// (ids, targets, positions, lengths, dropout seed) live in a *Batch that
// the ops keep: build the graph once per (B, T), refill the Batch per step.
//
// Training step (the trainer computes its objective on the host from
// per-token log-probs lp; the graph's cost is Dot(lp, g) with g = dLoss/dlp
// a Late input):
//
//	g := gorgonia.NewGraph()
//	b := graph.NewBatch(B, T)
//	x, _ := graph.Embedding(embed, b)            // embed: input node [V, C]
//	... decoder layers ...
//	lp, ent, _ := graph.LogProbs(logits, b, true)
//	dlp := gorgonia.NewVector(g, gorgonia.Float32, gorgonia.WithShape(B*T), gorgonia.WithName("dlp"))
//	cost, _ := graph.Dot(lp, dlp)
//	grads, _ := gorgonia.Grad(cost, trainable...)
//	ex, _ := graph.Compile(g, be, graph.Config{
//		Outputs: append(gorgonia.Nodes{lp, ent}, grads...),
//		Late:    []*gorgonia.Node{dlp},
//		Bind:    weights, // input node → Backend buffer, uploaded once
//	})
//	for each micro-batch {
//		b.IDs, b.Targets, b.Lens, b.Seed = ...
//		ex.Forward(); lps, _ := ex.Read(lp)    // or ex.Buffer(lp)
//		ex.Set(dlp, hostGrad(lps))
//		ex.Backward()                         // ex.Buffer(grads[i]) hold ∂cost/∂trainable[i]
//	}
//
// A forward-only executor (reference or old log-probs) is Compile of the
// same graph with Outputs {lp} and no Late: it runs and allocates only what
// lp needs. Executors compiled from one graph may share bound weights.
//
// LoRA: y = W x + (α/r)·B A x with dropout on the adapter input is
// Add(Linear(x, W), ScaleVar(Linear(Linear(Dropout(x, p, b), A), B), &s));
// set s = 0 to switch adapters off (reference policy) and b.Eval to turn
// dropout off, without rebuilding.
//
// Rules and caveats:
//   - Gorgonia merges input nodes with equal names and op nodes with equal
//     ops and inputs: give every input a unique name.
//   - Multi-output kernels return packed nodes whose parts are views (see
//     view.go); the entropy of LogProbs is an output only (no gradient).
//   - gorgonia.Grad adds the constant 1 and elementwise additions (gradient
//     accumulation); the Executor runs those and refuses any other
//     Gorgonia op.
//   - Backward reuses forward buffers: each Backward needs a fresh Forward.
//     Output buffers keep their values until the next run. An Executor, and
//     the Batch it reads, are not safe for concurrent use.
package graph
