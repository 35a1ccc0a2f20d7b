package trainer

// Multi-turn RL (rollout.max_turns > 1; docs/contracts.md §1 turns and
// env, §5). A step's prompts are rolled out as episodes
// (rollout.Engine.Episodes): after each assistant turn the environment
// (rollout.env) executes the turn's calls, its tool messages go back into
// the conversation, and generation continues until a turn makes no call
// (finish "done"), rollout.max_turns turns were taken ("max_turns") or
// the context is full ("context"). The G samples of a prompt are still
// its group.
//
// What the trainer trains on is the engine's ids as sampled: the prompt
// (the training example's, which the engine's rendering must equal) and
// the sample's ids, with π_old its log-probs. The ids the environment and
// the chat template added between turns are context only: Sample.Mask
// becomes rl.Rollout.Mask, and the objective gives them no term and no
// gradient and leaves them out of loss_agg's counts (rl/loss.go). The
// reward is the trajectory reward over reward.name (reward/trajectory.go):
// every turn against its gold turn and the final state against the gold
// turns' state; its argument spans, shifted into Sample.Text, give β its
// tokens in every turn. PPO runs GAE over the sampled tokens alone
// (ppo.go).
//
// Logged each step besides the RL metrics (resp_len then counts the
// sampled tokens, truncated_frac the episodes that ran out of context):
//
//	turns_mean                                   assistant turns per episode
//	env_tokens                                   environment and template ids per episode
//	finish_done, finish_max_turns, finish_context episodes by how they ended (counts)
//	reward_state, reward_exact_turns             the final-state score S and the turns that
//	                                             matched their gold exactly (the reward's parts)
//
// and at each evaluation greedy episodes on the validation records
// (data.val_max of them) give reward_mean, turns_mean, state_score and
// exact_turns.
//
// Data parallel: each rank rolls out its shares' episodes and every rank
// receives every sample, without the turns' parses (Turn.Parsed: the
// trainer reads the turns' texts; argument values of any JSON type do not
// travel between ranks), so one process and N ranks see the same samples.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/env"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/rl"
)

// episodes is what a multi-turn run adds to an rlRun.
type episodes struct {
	conv rollout.Conversation
	traj *reward.TrajectoryReward
	tc   reward.TrajectoryConfig
}

// setupEpisodes makes the run multi-turn when rollout.max_turns > 1: the
// environment, the conversation the engine continues and the trajectory
// reward over r.rw.
func (r *rlRun) setupEpisodes(cfg config.Config, s *Setup, log io.Writer) error {
	if cfg.Rollout.MaxTurns <= 1 {
		return nil
	}
	e, err := env.New(cfg.Rollout.Env)
	if err != nil {
		return fmt.Errorf("key \"rollout.env\": %w", err)
	}
	if name := cfg.Rollout.Env.Name; name != "http" { // a server of your own may run any record
		for _, ex := range s.Train.Examples {
			if ex.Rec.Env != nil && ex.Rec.Env.Name != name {
				return fmt.Errorf("key \"rollout.env.name\" is %s, but record %s of %s runs in %s (its env.name)", name, ex.Rec.ID, s.Train.Path, ex.Rec.Env.Name)
			}
		}
	}
	traj, err := reward.NewTrajectory(r.rw, e, cfg.Reward.Trajectory)
	if err != nil {
		return fmt.Errorf("key \"reward.trajectory\": %w", err)
	}
	r.mt = &episodes{traj: traj, tc: cfg.Reward.Trajectory,
		conv: rollout.Conversation{Env: e, Template: s.Template, Format: s.Format, MaxEnvTokens: cfg.Rollout.MaxEnvTokens}}
	r.params.MaxTurns = cfg.Rollout.MaxTurns
	fmt.Fprintf(log, "%s: multi-turn rollouts: at most %d turns of %d tokens, environment %s, reward %s\n",
		r.rlSpec.name, cfg.Rollout.MaxTurns, cfg.Rollout.MaxNewTokens, e.Name(), traj.Name())
	return nil
}

// generate rolls out this rank's prompts: single-turn groups, or the
// episodes of their records, whose prompts must be the training
// examples' (recs[at[i]] is prompt i's example, as in rollOut).
func (r *rlRun) generate(ctx context.Context, prompts []rollout.Prompt, at, recs []int, p rollout.Params) ([]*rollout.Group, error) {
	if r.mt == nil {
		return r.eng.Generate(ctx, prompts, p)
	}
	exs := r.Setup.Train.Examples
	rs := make([]data.Record, len(at))
	for i, k := range at {
		rs[i] = *exs[recs[k]].Rec
	}
	groups, err := r.eng.Episodes(ctx, rs, p, r.mt.conv)
	if err != nil {
		return nil, err
	}
	for i, g := range groups {
		if !slices.Equal(g.PromptIDs, prompts[i].IDs) {
			return nil, fmt.Errorf("record %s: the episode's prompt (%d ids) is not the training example's (%d ids)",
				rs[i].ID, len(g.PromptIDs), len(prompts[i].IDs))
		}
		for k := range g.Samples {
			for t := range g.Samples[k].Turns {
				g.Samples[k].Turns[t].Parsed = format.Parsed{} // see the file comment
			}
		}
	}
	return groups, nil
}

// sampledLen is the number of ids the policy sampled (every id of a
// single-turn sample).
func sampledLen(s *rollout.Sample) int { return rl.SampledCount(s.Mask, len(s.IDs)) }

// truncated says whether a sample was cut off: a single-turn response that
// did not end on a stop, an episode that ran out of context.
func truncated(s *rollout.Sample) bool {
	if s.Turns != nil {
		return s.Finish == rollout.FinishContext
	}
	return s.Finish != rollout.FinishStop
}

// episodeMetrics logs the episodes' turns, environment ids and finish
// reasons (nothing for a single-turn run).
func (r *rlRun) episodeMetrics(m metrics.Metrics, items []*item) {
	if r.mt == nil || len(items) == 0 {
		return
	}
	turns, envIDs := 0, 0
	finish := map[rollout.Finish]int{}
	for _, it := range items {
		turns += len(it.sample.Turns)
		envIDs += len(it.sample.IDs) - sampledLen(&it.sample)
		finish[it.sample.Finish]++
	}
	n := float64(len(items))
	m["turns_mean"], m["env_tokens"] = float64(turns)/n, float64(envIDs)/n
	for _, f := range []rollout.Finish{rollout.FinishDone, rollout.FinishTurns, rollout.FinishContext} {
		m["finish_"+string(f)] = float64(finish[f])
	}
}

// scoreItem is a rollout's reward: reward.name on the response, or the
// trajectory reward on an episode.
func (r *rlRun) scoreItem(ctx context.Context, it *item) (*reward.Result, error) {
	if r.mt == nil {
		return r.rw.Score(ctx, it.ex.Rec, it.sample.Text)
	}
	return r.mt.score(ctx, it.ex.Rec, &it.sample)
}

// score scores one episode of rec with the trajectory reward.
func (mt *episodes) score(ctx context.Context, rec *data.Record, s *rollout.Sample) (*reward.Result, error) {
	tr := reward.Trajectory{State: s.State, Turns: make([]string, len(s.Turns)), Starts: make([]int, len(s.Turns))}
	for i, t := range s.Turns {
		tr.Turns[i], tr.Starts[i] = t.Text, t.TextStart
	}
	res, err := mt.traj.Score(ctx, rec, tr)
	if err != nil {
		return nil, err
	}
	return trajectoryResult(res, mt.tc), nil
}

// trajectoryResult is a trajectory's reward as the RL step reads a
// reward's result: the reward, its parts and its argument spans (every
// turn's, in Sample.Text); the levels hold when every turn reached them;
// the gate lists the turns' gates; the terms (adv.per_part) are the
// weighted turn mean and state score, whose sum is the reward.
func trajectoryResult(tr *reward.TrajectoryResult, tc reward.TrajectoryConfig) *reward.Result {
	res := &reward.Result{Reward: tr.Reward, Parts: tr.Parts, Spans: tr.Spans,
		Terms: map[string]float64{"turns": tc.TurnWeight * tr.TurnMean, "state": 0}}
	if tr.HasState {
		res.Terms["state"] = tc.StateWeight * tr.State
	}
	lv := reward.Levels{TID: true, TSA: true, ACA: true, ALC: true, FCM: true}
	gates := make([]string, len(tr.Turns))
	for i, t := range tr.Turns {
		m := t.Metrics
		lv.TID, lv.TSA, lv.ACA, lv.ALC, lv.FCM = lv.TID && m.TID, lv.TSA && m.TSA, lv.ACA && m.ACA, lv.ALC && m.ALC, lv.FCM && m.FCM
		gates[i] = t.Gate
	}
	res.Metrics, res.Gate = lv, strings.Join(gates, " ")
	return res
}

// maxSampled is the most ids the policy samples per rollout
// (loss_agg seq-mean-token-sum-norm's constant length).
func (r *rlRun) maxSampled() int {
	return r.Config.Rollout.MaxNewTokens * max(1, r.Config.Rollout.MaxTurns)
}

// goldOf is what the rollouts file shows as the gold: the calls, or each
// turn's calls of a multi-turn record.
func goldOf(rec *data.Record) (json.RawMessage, error) {
	if len(rec.Turns) == 0 {
		return json.Marshal(rec.Calls)
	}
	turns := make([][]data.Call, len(rec.Turns))
	for i, t := range rec.Turns {
		turns[i] = t.Calls
	}
	return json.Marshal(turns)
}

// evalEpisodes adds, for a multi-turn run, the trajectory reward of greedy
// episodes on the validation records to e: reward_mean, turns_mean,
// state_score (the mean final-state score) and exact_turns.
func (r *rlRun) evalEpisodes(ctx context.Context, e metrics.Metrics) error {
	exs := r.Setup.Val.Examples
	if n := r.Config.Data.ValMax; n > 0 && n < len(exs) {
		exs = exs[:n]
	}
	if len(exs) == 0 {
		return nil
	}
	recs := make([]data.Record, len(exs))
	for i, ex := range exs {
		recs[i] = *ex.Rec
	}
	p := r.params
	p.G, p.Temperature, p.TopP, p.TopK, p.Seed = 1, 0, 0, 0, 0
	if r.Setup.Model.HasAdapters() {
		if err := r.Setup.Model.SetAdapters(true); err != nil {
			return err
		}
	}
	groups, err := r.eng.Episodes(ctx, recs, p, r.mt.conv)
	if err != nil {
		return fmt.Errorf("eval episodes: %w", err)
	}
	var sum, turns, state, exact float64
	for i, g := range groups {
		s := &g.Samples[0]
		res, err := r.mt.score(ctx, &recs[i], s)
		if err != nil {
			return fmt.Errorf("eval reward: %w", err)
		}
		sum += res.Reward
		turns += float64(len(s.Turns))
		state += res.Parts["state"]
		exact += res.Parts["exact_turns"]
	}
	n := float64(len(groups))
	e["reward_mean"], e["turns_mean"], e["state_score"], e["exact_turns"] = sum/n, turns/n, state/n, exact/n
	return nil
}
