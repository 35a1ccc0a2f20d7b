package trainer

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/metrics"
)

// checkModes fails for every file under root whose mode is not 0666 &^
// mask and every directory not 0777 &^ mask; it returns how many of each
// it checked.
func checkModes(t *testing.T, root string, mask fs.FileMode) (files, dirs int) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		want := 0o666 &^ mask
		if d.IsDir() {
			want, dirs = 0o777&^mask, dirs+1
		} else {
			files++
		}
		if got := st.Mode().Perm(); got != want {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("umask %03o: %s has mode %03o, want %03o", mask, rel, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, dirs
}

// Everything a run writes (config.yaml, metrics.jsonl, the lock, each
// checkpoint and best/, latest), and the exports beside it (a merged
// model, a PEFT adapter, plots, JSONL data), gets 0666 and 0777 less the
// umask, under a strict (077) and the common (022) umask alike.
func TestFileModesFollowUmask(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two SFT runs")
	}
	for _, mask := range []int{0o077, 0o022} {
		dir := t.TempDir()
		old := syscall.Umask(mask)
		func() {
			defer syscall.Umask(old)
			cfg := tinyConfig(filepath.Join(dir, "run"))
			cfg.Checkpoint.Every = 2
			runSFT(t, cfg, false, nil)
			best := filepath.Join(cfg.Run.Dir, ckpt.BestDir)
			if _, err := ckpt.OpenDir(best, -1); err != nil {
				t.Fatalf("no best/: %v", err)
			}
			out := filepath.Join(dir, "out")
			if err := WriteRandomModel(cfg.Model.Path, filepath.Join(out, "base"), 1); err != nil {
				t.Fatal(err)
			}
			if _, err := model.Export(filepath.Join(out, "base"), filepath.Join(out, "merged"), model.ExportOptions{Adapter: best, DType: "bf16"}); err != nil {
				t.Fatal(err)
			}
			mc, err := model.LoadConfig(filepath.Join(out, "base", "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			a, err := model.ImportPEFT(best, mc)
			if err != nil {
				t.Fatal(err)
			}
			if err := model.ExportPEFT(filepath.Join(out, "adapter"), a, mc); err != nil {
				t.Fatal(err)
			}
			if _, err := metrics.Plot(filepath.Join(cfg.Run.Dir, metrics.File), filepath.Join(out, "plots")); err != nil {
				t.Fatal(err)
			}
			recs, err := data.ReadFile(cfg.Data.Val)
			if err != nil {
				t.Fatal(err)
			}
			if err := data.WriteFile(filepath.Join(out, "val.jsonl"), recs); err != nil {
				t.Fatal(err)
			}
			f, d := checkModes(t, cfg.Run.Dir, fs.FileMode(mask))
			fo, do := checkModes(t, out, fs.FileMode(mask))
			if f < 12 || d < 4 || fo < 8 || do < 4 {
				t.Errorf("umask %03o: only %d+%d files and %d+%d directories checked", mask, f, fo, d, do)
			}
			ents, _ := os.ReadDir(cfg.Run.Dir)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if got := strings.Join(names, " "); !strings.Contains(got, ckpt.LockFile) || !strings.Contains(got, ConfigFile) {
				t.Errorf("the run directory holds %s", got)
			}
		}()
	}
}
