"""Two sets of Mathematics evaluations of one model, paired by seed: Table 1's module-averaged
interpolation and extrapolation accuracy and each module's accuracy, per set the mean ± sd over
seeds, and the paired difference (B − A) with its 95% t interval.

For runs of one configuration that differ in one setting (say the batch order), trained in two
checkouts: point --a and --b at their `mathematics/eval` folders (`<model>-s<seed>.csv`). A side may
also be a JSON this script wrote: its per-seed values of the set with that side's label are used,
so a new set can be paired with one whose evaluation files are gone.

    python -m benchmarks.paired_evaluations --model tp_transformer --a ../pooled/mathematics/eval \\
        --b ../random/mathematics/eval --labels pool16 random --out results/benchmarks/paired-....json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from tprepro.report.tables import read_eval, seed_table1

from benchmarks.kit.stats import interval

SPLITS = {"interpolation_acc": "interpolate", "extrapolation_acc": "extrapolate"}


def seed_files(folder: Path, model: str) -> dict[int, Path]:
    """seed -> `<model>-s<seed>.csv` in `folder`."""
    pattern = re.compile(rf"{re.escape(model)}-s(\d+)\.csv")
    return {int(m.group(1)): path for path in folder.glob("*.csv") if (m := pattern.fullmatch(path.name))}


def per_seed(files: dict[int, Path], seeds: list[int]) -> dict[str, dict[int, float]]:
    """metric (Table 1's two accuracies, `<split>/<module>`) -> seed -> accuracy in %."""
    evals = read_eval([files[s] for s in seeds])
    table = seed_table1(evals, threshold=0.95).set_index("seed")
    out = {metric: {s: 100 * float(table.loc[s, metric]) for s in seeds} for metric in SPLITS}
    for (split, module), group in evals.groupby(["split", "module"]):
        if split in SPLITS.values():
            by_seed = group.groupby("seed")[["correct", "n"]].sum()
            out[f"{split}/{module}"] = {s: 100 * float(by_seed.loc[s, "correct"] / by_seed.loc[s, "n"]) for s in seeds}
    return out


def recorded(path: Path, model: str, label: str) -> dict[str, dict[int, float]]:
    """metric -> seed -> accuracy of set `label` in a JSON this script wrote (for `model`)."""
    table = json.loads(path.read_text())
    if table["model"] != model or label not in table["labels"]:
        raise SystemExit(f"{path}: holds {table['model']} as {' and '.join(table['labels'])}, not {model} as {label}")
    return {metric: {int(seed): value for seed, value in row["seeds"][label].items()}
            for metric, row in table["metrics"].items()}


def side(path: Path, model: str, label: str) -> dict[str, dict[int, float]]:
    """metric -> seed -> accuracy of one side: a folder of evaluations, or a recorded JSON."""
    if path.suffix == ".json":
        return recorded(path, model, label)
    files = seed_files(path, model)
    return per_seed(files, sorted(files)) if files else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--a", type=Path, required=True, help="evaluation folder of set A")
    parser.add_argument("--b", type=Path, required=True, help="evaluation folder of set B")
    parser.add_argument("--labels", nargs=2, default=["A", "B"])
    parser.add_argument("--out", type=Path, required=True, help="JSON of the table")
    args = parser.parse_args()
    label_a, label_b = args.labels
    a, b = side(args.a, args.model, label_a), side(args.b, args.model, label_b)
    seeds = sorted(a.get("interpolation_acc", {}).keys() & b.get("interpolation_acc", {}).keys())
    if not seeds:
        raise SystemExit(f"no seed of {args.model} evaluated in both {args.a} and {args.b}")
    a, b = ({metric: {s: values[s] for s in seeds} for metric, values in found.items()} for found in (a, b))
    rows = {metric: {label_a: interval(list(a[metric].values())), label_b: interval(list(b[metric].values())),
                     "paired": interval([b[metric][s] - a[metric][s] for s in seeds]),
                     "seeds": {label_a: a[metric], label_b: b[metric]}} for metric in a if metric in b}
    print(f"{args.model}, seeds {seeds}: accuracy in %, mean ± sd; paired {label_b} − {label_a} (95% t interval)")
    print(f"| metric | {label_a} | {label_b} | {label_b} − {label_a} |\n|---|---|---|---|")
    for metric, row in rows.items():
        cells = [f"{row[label]['mean']:.2f} ± {row[label]['sd']:.2f}" for label in (label_a, label_b)]
        paired = row["paired"]
        print(f"| {metric} | {cells[0]} | {cells[1]} | "
              f"{paired['mean']:+.2f} [{paired['low']:+.2f}, {paired['high']:+.2f}] |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"model": args.model, "seeds": seeds, "a": str(args.a), "b": str(args.b),
                                    "labels": args.labels, "metrics": rows}, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
