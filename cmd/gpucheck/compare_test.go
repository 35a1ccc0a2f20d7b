package main

import (
	"os"
	"testing"

	"github.com/argrl/argrl/trainer/metrics"
)

func TestCompare(t *testing.T) {
	run := func(losses ...float64) map[int]metrics.Metrics {
		m := map[int]metrics.Metrics{}
		for i, l := range losses {
			m[i+1] = metrics.Metrics{"loss": l, "tokens_per_s": 100}
		}
		return m
	}
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	if _, err := compare(null, run(1, 0.9, 0.8), run(1.0001, 0.91, 0.79), 0.05); err != nil {
		t.Errorf("close runs rejected: %v", err)
	}
	if _, err := compare(null, run(1, 0.9, 0.8), run(1.2, 0.9, 0.8), 0.05); err == nil {
		t.Error("a different first step was accepted")
	}
	if _, err := compare(null, run(1, 0.9, 0.8), run(1, 0.5, 0.3), 0.05); err == nil {
		t.Error("diverging runs were accepted")
	}
	if _, err := compare(null, run(1, 0.9, 0.8), run(1, 0.9), 0.05); err == nil {
		t.Error("a missing step was accepted")
	}
}
