package report

// The tables of paper 000 that make reproduce prints, with the paper's
// numbers (Qwen2.5-14B-Instruct; Table 3 is the paper's English MGSM
// accuracy, beside which argrl prints its own probe, not the same task).

type tableRow struct {
	label string
	cells []cell
	paper []float64 // one per cell; NaN where the paper has none
}

type paperTable struct {
	title string
	cols  []string
	rows  []tableRow
}

// hier is TID..FCM of a stage on Split-1 then Split-2 (es).
func hier(stage string) []cell {
	var out []cell
	for _, sp := range []string{"learn", "gen"} {
		for _, m := range []string{"tid", "tsa", "aca", "alc", "fcm"} {
			out = append(out, cell{stage, sp, "es", m})
		}
	}
	return out
}

func alcFCM(stage string) []cell {
	return []cell{{stage, "learn", "es", "alc"}, {stage, "learn", "es", "fcm"}}
}

func transfer(stage string) []cell {
	var out []cell
	for _, l := range append(append([]string(nil), unseen...), "avg-unseen") {
		out = append(out, cell{stage, "gen", l, "alc"})
	}
	return out
}

var paperTables = []paperTable{
	{"Table 2: epoch-fixed, es (Split-1 learnability | Split-2 generalization)",
		[]string{"S1 TID", "S1 TSA", "S1 ACA", "S1 ALC", "S1 FCM", "S2 TID", "S2 TSA", "S2 ACA", "S2 ALC", "S2 FCM"},
		[]tableRow{
			{"Base", hier("base"), []float64{99.57, 91.48, 91.48, 52.34, 32.34, 99.72, 94.59, 94.59, 45.94, 22.16}},
			{"SFT", hier("sft"), []float64{100, 94.04, 94.04, 63.82, 40.42, 100, 95.40, 95.40, 54.34, 26.75}},
			{"GRPO", hier("grpo"), []float64{100, 91.91, 91.91, 74.47, 51.49, 100, 93.51, 93.51, 69.73, 42.70}},
			{"SFT+GRPO", hier("sft-grpo"), []float64{100, 93.61, 93.61, 75.32, 54.04, 100, 95.40, 95.40, 72.70, 45.59}},
			{"PPO", hier("ppo"), []float64{100, 92.76, 92.76, 71.91, 48.36, 99.46, 95.60, 95.60, 61.90, 37.84}},
			{"SFT+PPO", hier("sft-ppo"), []float64{100, 93.19, 93.19, 73.61, 49.78, 100, 95.41, 95.41, 68.11, 41.62}},
		}},
	{"Table 4: epoch-fixed vs best checkpoint (validation FCM), Split-1, es",
		[]string{"fixed ALC", "fixed FCM", "best ALC", "best FCM"},
		[]tableRow{
			{"SFT", append(alcFCM("sft"), alcFCM("sft-best")...), []float64{63.8, 40.4, 79.1, 67.4}},
			{"GRPO", append(alcFCM("grpo"), alcFCM("grpo-best")...), []float64{74.5, 51.5, 74.0, 55.3}},
			{"SFT+GRPO", append(alcFCM("sft-grpo"), alcFCM("sft-grpo-best")...), []float64{75.3, 54.0, 79.3, 61.3}},
		}},
	{"Table 5: reward model (GRPO, best checkpoint, Split-1, es)",
		[]string{"ALC", "FCM"},
		[]tableRow{
			{"RM-1", alcFCM("grpo-rm1-best"), []float64{61.3, 43.3}},
			{"RM-2", alcFCM("grpo-rm2-best"), []float64{72.2, 51.0}},
			{"RM-3", alcFCM("grpo-best"), []float64{74.0, 55.3}},
		}},
	{"Table 6: PPO vs GRPO (RM-3, best checkpoint, Split-1, es)",
		[]string{"ALC", "FCM"},
		[]tableRow{
			{"PPO", alcFCM("ppo-best"), []float64{72.6, 58.4}},
			{"GRPO", alcFCM("grpo-best"), []float64{81.2, 66.9}},
		}},
	{"Table 7: token weighting β (best checkpoint, Split-1, es)",
		[]string{"ALC", "FCM"},
		[]tableRow{
			{"GRPO β=1", alcFCM("grpo-best"), []float64{74.04, 55.32}},
			{"GRPO β=3", alcFCM("grpo-b3-best"), []float64{77.74, 55.89}},
			{"PPO β=1", alcFCM("ppo-best"), []float64{71.08, 45.40}},
			{"PPO β=3", alcFCM("ppo-b3-best"), []float64{50.81, 25.85}},
		}},
	{"Table 8: cross-lingual ALC, Split-2, trained on es only (best checkpoint)",
		[]string{"IT", "NL", "FR", "AVG"},
		[]tableRow{
			{"Base", transfer("base"), []float64{39.23, 55.16, 42.48, 45.62}},
			{"SFT", transfer("sft-best"), []float64{57.01, 53.27, 63.37, 57.88}},
			{"GRPO", transfer("grpo-best"), []float64{56.05, 57.23, 59.88, 57.72}},
		}},
	{"Table 3 analogue: retention probe, FCM on held-out English base-corpus requests [paper: English MGSM accuracy, another task]",
		[]string{"probe FCM"},
		[]tableRow{
			{"Base", []cell{{"base", "probe", "en", "fcm"}}, []float64{70.80}},
			{"SFT", []cell{{"sft-best", "probe", "en", "fcm"}}, []float64{62.20}},
			{"GRPO", []cell{{"grpo-best", "probe", "en", "fcm"}}, []float64{70.40}},
			{"SFT+GRPO", []cell{{"sft-grpo-best", "probe", "en", "fcm"}}, []float64{65.60}},
		}},
}
