package synth

import (
	"fmt"
	"testing"
)

func TestDebugDump(t *testing.T) {
	cfg := DefaultConfig()
	out, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(out.Report)
	if err := out.WriteDir("/tmp/synthout"); err != nil {
		t.Fatal(err)
	}
}
