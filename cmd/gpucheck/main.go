// Command gpucheck holds the measurements of make gpu-check
// (kernels/cuda/gpu-check.sh): each subcommand is one step with its own
// timeout in the script and writes its rows of the summary table to a
// JSON file (-out); `gpucheck table` prints them all.
//
//	gpucheck compare [-tol 0.05] A_RUN B_RUN     losses of two runs of one config
//	gpucheck model -shape 7b|tiny DIR            a random-weight checkpoint (modeltest)
//	gpucheck decode -model DIR -backend B ...    decode tokens/s at each -batch, eager vs graphs at each -graphs
//	gpucheck sft -model DIR -backend B ...       LoRA SFT tokens/s and MFU
//	gpucheck grpo -model DIR -backend B ...      one GRPO step, split by phase
//	gpucheck memory -model DIR -backend B ...    activation memory of a training step
//	gpucheck ceilings -backend B ...             copy GB/s and bf16 GEMM TFLOP/s of the device
//	gpucheck row -out F -check NAME -status S    a row written by the script itself
//	gpucheck table [-json F] [-plan P] F.json... the summary table (exit 1 on a FAIL)
//
// Built with -tags argrl_cuda it runs on the GPU backends ("cuda",
// "cuda-bf16"); every build has the emulated ones ("cuda-emu",
// "cuda-emu-bf16"), which the dry run uses.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: gpucheck compare|model|decode|sft|grpo|memory|ceilings|row|table ... (see the package doc)")
	}
	cmds := map[string]func([]string) error{
		"compare": runCompare, "model": runModel, "decode": runDecode, "sft": runSFT,
		"grpo": runGRPO, "memory": runMemory, "row": runRow, "table": runTable, "ceilings": runCeilings,
	}
	f, ok := cmds[args[0]]
	if !ok {
		return fmt.Errorf("unknown subcommand %q (compare, model, decode, sft, grpo, memory, ceilings, row, table)", args[0])
	}
	return f(args[1:])
}

// Row is one line of the summary table.
type Row struct {
	Check  string `json:"check"`
	Value  string `json:"value"`
	Detail string `json:"detail"`
	Status string `json:"status"` // ok, FAIL, skipped, note, "not run"
	// Key names the figure for the performance model's prediction
	// (`train plan --json`, docs/gpu.md): "decode_b64_tok_s", …
	Key string `json:"key,omitempty"`
	// Predicted is the model's figure for Key, filled by `gpucheck table
	// -plan`; "" is printed "—".
	Predicted string `json:"predicted,omitempty"`
}

func statusOf(err error) string {
	if err != nil {
		return "FAIL"
	}
	return "ok"
}

// writeRows writes rows as a JSON array to path ("" writes nothing).
func writeRows(path string, rows ...Row) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
