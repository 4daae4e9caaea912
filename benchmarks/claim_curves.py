"""Two models' learning curves, paired over seeds: what a run's budget resolves of a claim "B learns more than A",
and what more steps or seeds would take.

Reads each run's `learning_curve.csv` (held-out exact match at every checkpoint, evaluate/curves.py) from a finished
pipeline's models folder, `<model>-s<seed>/`. Per checkpoint: each model's mean over seeds and the paired difference
B − A with its 95% t interval; then, for the last checkpoint, the seeds the interval would need to exclude 0 if the
difference and its spread stayed as they are, and each model's rise over the last quarter of the steps (points per
1,000 steps; near 0: the curve has flattened, so more steps would not move it at this size). Prints a table, writes JSON.

    python -m benchmarks.claim_curves --models-dir ../cpurun/mathematics/models --a transformer --b tp_transformer
    python -m benchmarks.claim_curves --models-dir ../cpurun/two_variable/models --a transformer --b aut
"""

from __future__ import annotations

import argparse
import re
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, required=True, help="a finished run's models folder")
    parser.add_argument("--a", required=True, help="the reference model")
    parser.add_argument("--b", required=True, help="the model compared with it (B − A)")
    parser.add_argument("--out", type=Path, default=None, help="default results/benchmarks/claim-<a>-<b>.json")
    args = parser.parse_args()
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
