"""Two models' learning curves, paired over seeds: what a run's budget resolves of a claim "B learns more than A",
and what more steps or seeds would take.

Reads each run's `learning_curve.csv` (held-out exact match at every checkpoint, evaluate/curves.py) from a finished
pipeline's models folder, `<model>-s<seed>/`. Per checkpoint: each model's mean over seeds and the paired difference
B − A with its 95% t interval; then, for the last checkpoint, the seeds the interval would need to exclude 0 if the
difference and its spread stayed as they are, and each model's rise over the last quarter of the steps (points per
1,000 steps; near 0: the curve has flattened, so more steps would not move it at this size). Prints a table, writes JSON.

    python -m benchmarks.claim_curves --models-dir ../cpurun/mathematics/models --a transformer --b tp_transformer
    python -m benchmarks.claim_curves --models-dir ../cpurun/two_variable/models --a transformer --b aut

`--design` reads such a report instead and a params file's plan: for each checkpoint taken as the budget's step
count, the seeds the two models' trainings afford within `--core-hours` (each model's CPU seconds per step from
`tprepro plan`, a fixed evaluation per run) beside the seeds that checkpoint's gap and spread need. The gap is
averaged with its neighbours (the curves score 64 problems, so one checkpoint is noisy); the spread is the
curve's own, larger than a 1,000-problem evaluation's. A run with fewer steps decays its rate by then (cosine),
so this is a design, not a prediction:

    python -m benchmarks.claim_curves --design results/benchmarks/claim-cpu-mathematics-transformer-tp_transformer.json \
        --params workflow/configs/cpu.yaml --core-hours 4.2
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from tprepro.evaluate.curves import CURVE_FILE, read_curve

from benchmarks.kit.report import markdown_table, stamp, write_report
from benchmarks.kit.stats import interval, paired_interval

MAX_SEEDS = 1000  # beyond this, "seeds needed" is reported as more than it


def curves(models_dir: Path, model: str) -> dict[int, dict[int, float]]:
    """seed -> step -> held-out exact match (in %) of `model`'s runs in `models_dir`."""
    found = {}
    for folder in models_dir.iterdir():
        match = re.fullmatch(rf"{re.escape(model)}-s(\d+)", folder.name)
        if match and (folder / CURVE_FILE).is_file():
            frame = read_curve(folder / CURVE_FILE)
            found[int(match.group(1))] = dict(zip(frame["step"].astype(int), 100 * frame["heldout_exact_match"]))
    if not found:
        raise SystemExit(f"{models_dir}: no {model}-s<seed>/{CURVE_FILE}")
    return found


def seeds_needed(mean: float, sd: float) -> int | None:
    """The fewest seeds whose paired 95% t interval excludes 0 at this mean difference and sd (None: more than
    MAX_SEEDS, or no difference)."""
    if not mean or np.isnan(sd):
        return None
    for n in range(2, MAX_SEEDS + 1):
        if stats.t.ppf(0.975, n - 1) * sd / n ** 0.5 < abs(mean):
            return n
    return None


def rise(curve_by_seed: dict[int, dict[int, float]]) -> float:
    """The mean over seeds of the curve's least-squares slope over its last quarter of steps, per 1,000 steps."""
    slopes = []
    for curve in curve_by_seed.values():
        steps = sorted(curve)
        last = [s for s in steps if s >= steps[-1] * 0.75] or steps[-2:]
        if len(last) > 1:
            slopes.append(1000 * np.polyfit(last, [curve[s] for s in last], 1)[0])
    return float(np.mean(slopes)) if slopes else float("nan")


def compare(models_dir: Path, a: str, b: str) -> dict:
    first, second = curves(models_dir, a), curves(models_dir, b)
    seeds = sorted(set(first) & set(second))
    steps = sorted(set.intersection(*(set(first[s]) & set(second[s]) for s in seeds)))
    points = [{"step": step, a: interval([first[s][step] for s in seeds])["mean"],
               b: interval([second[s][step] for s in seeds])["mean"],
               "paired": paired_interval({s: first[s][step] for s in seeds}, {s: second[s][step] for s in seeds})}
              for step in steps]
    last = points[-1]["paired"]
    return {"models_dir": str(models_dir), "a": a, "b": b, "seeds": seeds, "points": points,
            "seeds_needed": seeds_needed(last["mean"], last["sd"]),
            "rise_per_1000_steps": {a: rise(first), b: rise(second)}}


def seconds_per_step(params: Path, stage: str = "train") -> dict[str, float]:
    """Each model's CPU seconds per training step in `params`'s plan (`tprepro plan --json`), and the mean seconds
    of one of its evaluations under "evaluate" (the job the stage's evaluate rule prices)."""
    done = subprocess.run([sys.executable, "-m", "tprepro.cli", "plan", "--params", str(params), "--json", "-"],
                          capture_output=True, text=True, check=True)
    jobs = json.loads(done.stdout)["jobs"]
    per_step = {job["item"]["model"]: job["seconds"] / job["work"]["steps"] for job in jobs if job["rule"] == stage}
    evaluations = [job["seconds"] for job in jobs if job["rule"] == stage.replace("train", "evaluate")]
    return {**per_step, "evaluate": float(np.mean(evaluations)) if evaluations else 0.0}


def design(report: dict, costs: dict[str, float], core_hours: float, window: int = 2) -> list[dict]:
    """Per checkpoint step s of `report` (compare's result): the seeds that `core_hours` afford when both models
    train s steps and are evaluated once per seed, and the seeds needed at the gap averaged over ±`window`
    checkpoints with the checkpoint's own spread."""
    a, b, points = report["a"], report["b"], report["points"]
    rows = []
    for i, point in enumerate(points):
        near = points[max(0, i - window):i + window + 1]
        gap = float(np.mean([p["paired"]["mean"] for p in near]))
        sd = float(np.sqrt(np.mean([p["paired"]["sd"] ** 2 for p in near])))
        per_seed = point["step"] * (costs[a] + costs[b]) + 2 * costs["evaluate"]
        rows.append({"step": point["step"], "gap": gap, "sd": sd, "seed_cost_s": per_seed,
                     "seeds_affordable": int(core_hours * 3600 // per_seed), "seeds_needed": seeds_needed(gap, sd)})
    return rows


def main_design(args: argparse.Namespace) -> None:
    report = json.loads(args.design.read_text())
    rows = design(report, seconds_per_step(args.params), args.core_hours)
    print(f"{args.design} under {args.params}'s per-step costs, {args.core_hours} core-hours for the two models' "
          f"trainings and evaluations; gap {report['b']} − {report['a']} (mean over ±2 checkpoints), sd the curve's")
    print(markdown_table(["steps", "gap", "sd", "core-min per seed", "seeds affordable", "seeds needed"],
                         [[r["step"], f"{r['gap']:+.1f}", f"{r['sd']:.1f}", f"{r['seed_cost_s'] / 60:.1f}",
                           r["seeds_affordable"], r["seeds_needed"] or f">{MAX_SEEDS}"] for r in rows]))
    out = args.out or args.design.with_name(args.design.stem + "-design.json")
    write_report(out, {**stamp(), "claim": str(args.design), "params": str(args.params),
                       "core_hours": args.core_hours, "rows": rows})
    print(f"-> {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, help="a finished run's models folder")
    parser.add_argument("--a", help="the reference model")
    parser.add_argument("--b", help="the model compared with it (B − A)")
    parser.add_argument("--design", type=Path, help="a report of this script: design a budget from its curves")
    parser.add_argument("--params", type=Path, default=Path("workflow/configs/cpu.yaml"),
                        help="--design: the params file whose plan prices a training step")
    parser.add_argument("--core-hours", type=float, default=4.0, help="--design: the budget of the two models' runs")
    parser.add_argument("--out", type=Path, default=None, help="default results/benchmarks/claim-<a>-<b>.json")
    args = parser.parse_args()
    if args.design:
        return main_design(args)
    if not (args.models_dir and args.a and args.b):
        parser.error("--models-dir, --a and --b are required (or --design REPORT)")
    result = compare(args.models_dir, args.a, args.b)
    a, b = args.a, args.b
    print(f"{args.models_dir}: seeds {result['seeds']}; held-out exact match in %, {b} − {a} paired (95% t interval)")
    print(markdown_table(["step", a, b, f"{b} − {a}"],
                         [[p["step"], f"{p[a]:.1f}", f"{p[b]:.1f}",
                           f"{p['paired']['mean']:+.1f} [{p['paired']['low']:+.1f}, {p['paired']['high']:+.1f}]"]
                          for p in result["points"]]))
    needed = result["seeds_needed"]
    print(f"seeds for the last difference to exclude 0 at its sd: {needed or f'more than {MAX_SEEDS}'}; rise over the "
          f"last quarter, points per 1,000 steps: " + ", ".join(f"{m} {v:+.2f}" for m, v in
                                                             result["rise_per_1000_steps"].items()))
    out = args.out or Path(f"results/benchmarks/claim-{a}-{b}.json")
    write_report(out, {**stamp(), **result})
    print(f"-> {out}")


if __name__ == "__main__":
    main()
