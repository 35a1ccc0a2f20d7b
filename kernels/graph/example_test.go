package graph_test

import (
	"fmt"
	"log"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/graph"
)

// A bigram model trained one step on the mean negative log-likelihood:
// build once, then Forward, compute dLoss/dlp on the host, Backward.
func Example() {
	const B, T, V, C = 1, 4, 10, 8
	g := gorgonia.NewGraph()
	b := graph.NewBatch(B, T)
	embed := gorgonia.NewMatrix(g, gorgonia.Float32, gorgonia.WithShape(V, C), gorgonia.WithName("embed"))
	head := gorgonia.NewMatrix(g, gorgonia.Float32, gorgonia.WithShape(V, C), gorgonia.WithName("lm_head"))
	dlp := gorgonia.NewVector(g, gorgonia.Float32, gorgonia.WithShape(B*T), gorgonia.WithName("dlp"))

	x, err := graph.Embedding(embed, b)
	check(err)
	logits, err := graph.Linear(x, head)
	check(err)
	lp, _, err := graph.LogProbs(logits, b, false)
	check(err)
	cost, err := graph.Dot(lp, dlp)
	check(err)
	grads, err := gorgonia.Grad(cost, embed, head)
	check(err)

	be := kernels.NewCPU()
	w := be.Alloc(kernels.F32, V*C) // zero weights: uniform predictions
	ex, err := graph.Compile(g, be, graph.Config{
		Outputs: append(gorgonia.Nodes{lp}, grads...),
		Late:    []*gorgonia.Node{dlp},
		Bind:    map[*gorgonia.Node]kernels.Buffer{head: w},
	})
	check(err)
	defer ex.Close()

	b.IDs, b.Targets = []int32{1, 2, 3, 4}, []int32{2, 3, 4, -1}
	check(ex.Forward())
	lps, err := ex.Read(lp)
	check(err)
	host := make([]float32, B*T) // loss = −mean over the 3 targets
	for i, t := range b.Targets {
		if t >= 0 {
			host[i] = -1.0 / 3
		}
	}
	check(ex.Set(dlp, host))
	check(ex.Backward())
	fmt.Printf("lp %.4f %.4f %.4f %.4f\n", lps[0], lps[1], lps[2], lps[3])
	fmt.Println("d lm_head elements:", ex.Buffer(grads[1]).Len())
	// Output:
	// lp -2.3026 -2.3026 -2.3026 0.0000
	// d lm_head elements: 80
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
