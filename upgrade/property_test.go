package upgrade

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// stored is the part of the CR's status the machine keeps, as the apiserver stores it.
type stored struct {
	LastGood string             `json:"lastGoodImage,omitempty"`
	Upgrade  *v1.UpgradeStatus  `json:"upgrade,omitempty"`
	History  []v1.UpgradeRecord `json:"upgradeHistory,omitempty"`
}

// roundTrip is a restart: the status is only what survived JSON (second precision).
func roundTrip(t *testing.T, s stored) stored {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out stored
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// step is one random observation of the world, beyond what the machine itself caused.
type step struct {
	advance   time.Duration
	newImage  int  // index into images, -1 keeps spec.image
	lag       bool // the Deployment still runs the image of the decision before the last
	healthy   bool
	crashloop bool
	boot      Boot
	corrupt   bool // status.lastGoodImage lost (a hand edit)
}

var images = []string{imgA, imgB, imgC, "ghcr.io/x/app:v4"}

func randomSteps(r *rand.Rand, n int) []step {
	out := make([]step, n)
	for i := range out {
		s := step{advance: time.Duration(r.IntN(90)) * time.Second, newImage: -1,
			lag: r.IntN(4) == 0, healthy: r.IntN(3) > 0, crashloop: r.IntN(6) == 0, boot: Boot(r.IntN(3))}
		if r.IntN(8) == 0 {
			s.newImage = r.IntN(len(images))
		}
		s.corrupt = r.IntN(200) == 0
		out[i] = s
	}
	return out
}

// world simulates the CR and its Deployment driven by the decisions.
type world struct {
	desired         string
	applied, before string // the last two images the Deployment was told to run
	status          stored
	now             time.Time
	restart         bool
}

func (w *world) observe(s step) Observed {
	running := w.applied
	if s.lag {
		running = w.before
	}
	return Observed{Name: "web", Desired: w.desired, Running: running, Healthy: s.healthy && running != "",
		LastGood: w.status.LastGood, Upgrade: w.status.Upgrade, History: w.status.History,
		Preflight: s.boot, Crashloop: s.crashloop}
}

func (w *world) apply(t *testing.T, d Decision) {
	w.before, w.applied = w.applied, d.Image
	w.status = stored{LastGood: d.LastGood, Upgrade: d.Upgrade, History: d.History}
	if w.restart {
		w.status = roundTrip(t, w.status)
	}
}

// TestPlanInvariantOverRandomSequences drives Plan with random observation sequences and
// checks, at every step: production runs lastGood while the candidate is unproven or failed;
// lastGood advances only after a healthy, soaked candidate (or when adopting a first baseline);
// a Failed target is never flipped again until spec.image changes; a run that restarts
// (status through JSON) at every step decides exactly as one that never restarts.
func TestPlanInvariantOverRandomSequences(t *testing.T) {
	runs, length := 300, 120
	if testing.Short() {
		runs = 100
	}
	for seed := range uint64(runs) {
		r := rand.New(rand.NewPCG(seed, 0x13))
		cfg := Config{Preflight: r.IntN(3) > 0, PreflightDeadline: time.Duration(r.IntN(200)) * time.Second,
			RolloutDeadline: time.Duration(r.IntN(200)) * time.Second, Soak: time.Duration(r.IntN(3)*60) * time.Second}
		steps := randomSteps(r, length)
		mem := &world{desired: imgA, now: t0}
		disk := &world{desired: imgA, now: t0, restart: true}
		healthySince := map[string]time.Time{} // target → start of its current healthy streak in Rolling
		failedTarget := ""
		for i, s := range steps {
			for _, w := range []*world{mem, disk} {
				w.now = w.now.Add(s.advance)
				if s.newImage >= 0 {
					w.desired = images[s.newImage]
				}
				if s.corrupt {
					w.status.LastGood = ""
				}
			}
			if s.newImage >= 0 && images[s.newImage] != failedTarget {
				failedTarget = ""
			}
			o := mem.observe(s)
			prev := o.Upgrade
			d := Plan(o, cfg, mem.now)
			dd := Plan(disk.observe(s), cfg, disk.now)
			if !reflect.DeepEqual(js(t, d), js(t, dd)) {
				t.Fatalf("seed %d step %d: restarted run decided\n%s\nnot\n%s", seed, i, js(t, dd), js(t, d))
			}
			if again := Plan(o, cfg, mem.now); !reflect.DeepEqual(js(t, again), js(t, d)) {
				t.Fatalf("seed %d step %d: Plan is not deterministic", seed, i)
			}
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d step %d (obs %+v, upgrade %+v): "+format, append([]any{seed, i, o, prev}, args...)...)
			}
			if d.Image == "" {
				fail("empty image")
			}
			// Production runs lastGood while the candidate is unproven or failed.
			switch ph := d.Phase(); {
			case d.LastGood == "":
			case ph == Preflighting || ph == RollingBack || ph == Failed:
				if d.Image != d.LastGood {
					fail("phase %s runs %s, not lastGood %s", ph, d.Image, d.LastGood)
				}
			case ph == Stable && d.Image != d.LastGood:
				fail("stable runs %s, not lastGood %s", d.Image, d.LastGood)
			case ph == Rolling && cfg.Preflight && (prev == nil || Phase(prev.Phase) != Rolling || prev.TargetImage != d.Upgrade.TargetImage):
				passed := prev != nil && Phase(prev.Phase) == Preflighting && prev.TargetImage == d.Upgrade.TargetImage && o.Preflight == BootReady
				if !passed && o.Running != d.Image {
					fail("candidate %s entered production without a passed pre-flight", d.Image)
				}
			}
			// Track the candidate's healthy streak as observed while Rolling.
			if prev != nil && Phase(prev.Phase) == Rolling && o.Running == prev.TargetImage && o.Healthy && !o.Crashloop {
				if _, ok := healthySince[prev.TargetImage]; !ok {
					healthySince[prev.TargetImage] = mem.now.Truncate(time.Second)
				}
			} else if prev != nil {
				delete(healthySince, prev.TargetImage)
			}
			// lastGood advances only after a soaked success, or adopting a first baseline.
			if d.LastGood != o.LastGood {
				switch {
				case o.LastGood == "" && d.LastGood == o.Running && o.Healthy && d.Event != nil && d.Event.Reason == ReasonBaselineAdopted:
					// A lost (hand-edited) lastGood: the healthy running image is adopted, as on
					// a first install.
				case prev != nil && Phase(prev.Phase) == Rolling && d.Record != nil && d.Record.Result == ResultSucceeded:
					since, ok := healthySince[prev.TargetImage]
					if !ok || mem.now.Truncate(time.Second).Sub(since) < cfg.Soak || d.LastGood != prev.TargetImage {
						fail("lastGood advanced to %s unsoaked (healthy since %v, now %v)", d.LastGood, since, mem.now)
					}
					delete(healthySince, prev.TargetImage)
				default:
					fail("lastGood moved %q → %q outside a soaked success", o.LastGood, d.LastGood)
				}
			}
			// The Failed latch: the same target is never flipped again.
			if failedTarget != "" {
				if d.Phase() != Failed || d.Upgrade.TargetImage != failedTarget || (d.LastGood != "" && d.Image == failedTarget) {
					fail("failed target %s reopened: phase %s image %s", failedTarget, d.Phase(), d.Image)
				}
			}
			if d.Phase() == Failed && o.Desired == d.Upgrade.TargetImage {
				failedTarget = d.Upgrade.TargetImage
			}
			if len(d.History) > MaxHistory {
				fail("history of %d", len(d.History))
			}
			mem.apply(t, d)
			disk.apply(t, dd)
		}
	}
}

func js(t *testing.T, d Decision) string {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestSequences are the named end-to-end sequences of the reference implementation.
func TestSequences(t *testing.T) {
	type obs struct {
		running   string // "" = the decision's image
		healthy   bool
		crashloop bool
		boot      Boot
		after     time.Duration
	}
	run := func(t *testing.T, cfg Config, steps []obs) (w *world, ds []Decision) {
		w = &world{desired: imgB, applied: imgA, status: stored{LastGood: imgA}, now: t0}
		for _, s := range steps {
			w.now = w.now.Add(s.after)
			o := Observed{Name: "web", Desired: w.desired, Running: w.applied, Healthy: s.healthy, LastGood: w.status.LastGood,
				Upgrade: w.status.Upgrade, History: w.status.History, Preflight: s.boot, Crashloop: s.crashloop}
			if s.running != "" {
				o.Running = s.running
			}
			d := Plan(o, cfg, w.now)
			ds = append(ds, d)
			w.apply(t, d)
		}
		return w, ds
	}
	t.Run("sequence_happy_upgrade", func(t *testing.T) {
		w, ds := run(t, cfgPF, []obs{{healthy: true}, {healthy: true, boot: BootReady, after: 20 * time.Second},
			{healthy: false, after: 5 * time.Second}, {healthy: true, after: 10 * time.Second}, {healthy: true, after: 61 * time.Second}})
		phases := []Phase{Preflighting, Rolling, Rolling, Rolling, Stable}
		for i, d := range ds {
			if d.Phase() != phases[i] {
				t.Errorf("step %d: phase %s, want %s", i, d.Phase(), phases[i])
			}
		}
		if w.status.LastGood != imgB || w.applied != imgB || len(w.status.History) != 1 || w.status.History[0].Result != ResultSucceeded {
			t.Errorf("end: %+v running %s", w.status, w.applied)
		}
	})
	t.Run("sequence_crashloop_auto_rollback_keeps_prod_on_last_good", func(t *testing.T) {
		w, ds := run(t, cfgNoPF, []obs{{healthy: true}, {crashloop: true, after: 20 * time.Second},
			{running: imgB, after: 5 * time.Second}, {healthy: true, after: 5 * time.Second}, {healthy: true, after: 500 * time.Second}})
		phases := []Phase{Rolling, RollingBack, RollingBack, Failed, Failed}
		for i, d := range ds {
			if d.Phase() != phases[i] {
				t.Errorf("step %d: phase %s, want %s", i, d.Phase(), phases[i])
			}
		}
		if w.status.LastGood != imgA || w.applied != imgA || w.status.History[0].Result != ResultRolledBack {
			t.Errorf("end: %+v running %s", w.status, w.applied)
		}
	})
	t.Run("sequence_soak_catches_a_late_crash_and_keeps_prod_on_last_good", func(t *testing.T) {
		w, _ := run(t, cfgNoPF, []obs{{healthy: true}, {healthy: true, after: 5 * time.Second}, {healthy: true, after: 50 * time.Second},
			{crashloop: true, after: 4 * time.Second}, {healthy: true, after: 5 * time.Second}})
		if w.status.LastGood != imgA || w.applied != imgA || Phase(w.status.Upgrade.Phase) != Failed {
			t.Errorf("end: %+v running %s", w.status, w.applied)
		}
	})
	t.Run("sequence_migration_crash_preflight_never_reaches_prod", func(t *testing.T) {
		w, ds := run(t, cfgPF, []obs{{healthy: true}, {healthy: true, after: 10 * time.Second},
			{healthy: true, boot: BootFailed, after: 10 * time.Second}, {healthy: true, boot: BootReady, after: 10 * time.Second}})
		for i, d := range ds {
			if d.Image != imgA {
				t.Errorf("step %d: production ran %s", i, d.Image)
			}
		}
		if Phase(w.status.Upgrade.Phase) != Failed || w.status.History[0].Result != ResultPreflightFailed {
			t.Errorf("end: %+v", w.status)
		}
	})
	t.Run("sequence_resume_after_restart_is_identical", func(t *testing.T) {
		steps := []obs{{healthy: true}, {healthy: true, boot: BootReady, after: 20 * time.Second}, {healthy: true, after: 10 * time.Second},
			{healthy: true, after: 30 * time.Second}, {healthy: true, after: 40 * time.Second}}
		_, a := run(t, cfgPF, steps)
		// The same, with the status read back from JSON before each decision.
		w := &world{desired: imgB, applied: imgA, status: stored{LastGood: imgA}, now: t0.Add(250 * time.Millisecond), restart: true}
		for i, s := range steps {
			w.now = w.now.Add(s.after)
			d := Plan(Observed{Name: "web", Desired: w.desired, Running: w.applied, Healthy: s.healthy, LastGood: w.status.LastGood,
				Upgrade: w.status.Upgrade, History: w.status.History, Preflight: s.boot}, cfgPF, w.now)
			if js(t, d) != js(t, a[i]) {
				t.Errorf("step %d after restart:\n%s\nwant\n%s", i, js(t, d), js(t, a[i]))
			}
			w.apply(t, d)
		}
	})
}
