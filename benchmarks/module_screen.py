"""What a small model learns within a CPU budget: held-out accuracy per module (or expression type) over steps.

Mathematics: trains one model on the union of candidate modules (the real generator through
the project's data stage, train-easy/medium/hard; the project's Trainer and its IID stream)
and, every `--eval-every` steps, scores greedy exact match on each module's interpolate
sample, the split Table 1 reports. Two-variable: the same on the experiment's generated
train split, scored per expression type on its test split. This is the measurement
`workflow/configs/cpu.yaml` picks its modules and budgets from.

    python -m benchmarks.module_screen --preset tp_transformer_tiny --steps 4000 --label tp
    python -m benchmarks.module_screen --modules numbers__place_value comparison__pair --steps 500
    python -m benchmarks.module_screen --experiment two_variable --preset aut_tiny --size 60000
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import torch

from tprepro.data.shards import iter_rows, open_dataset
from tprepro.data.vocab import build_vocab
from tprepro.evaluate.evaluate import EvalSet, full_set, score
from tprepro.experiments.mathematics.modules import INTERPOLATE, TRAIN_SPLITS
from tprepro.experiments.two_variable.data import TEST, TRAIN, TYPES, write_two_variable
from tprepro.models.registry import resolve_model_config

from benchmarks.kit.overrides import SIZES, cpu_run, given, params_train
from benchmarks.kit.report import markdown_table, stamp, write_report
from benchmarks.kit.runner import Recorder, preset_run, train
from benchmarks.kit.sample import REPO, generate_sample

# The modules a tiny model plausibly learns: single-answer selection, copying and comparison.
CANDIDATES = ["numbers__place_value", "numbers__round_number", "comparison__pair", "comparison__sort",
              "comparison__kth_biggest", "comparison__closest", "algebra__linear_1d",
              "arithmetic__add_or_sub"]


def module_accuracy(eval_sets, vocab, max_len: int, recorder: Recorder, started: float):
    """The probe: greedy exact match on every held-out set (a module, or an expression type), printed with the
    window's step and loss; `wall_seconds`: since `started`, scoring included."""
    def probe(model) -> dict:
        accuracy = {s.module: score(model, vocab, s, 256, max_len)["accuracy"] for s in eval_sets}
        point = recorder.logged[-1]
        print(f"step {point['step']:>6}  loss {point['loss']:.3f}  " + "  ".join(
            f"{m.split('__')[-1][:12]} {a:.2f}" for m, a in accuracy.items()), flush=True)
        return {"accuracy": accuracy, "wall_seconds": time.perf_counter() - started}

    return probe


def mathematics_data(args):
    """Training datasets per (split, module), interpolate eval sets per module, their vocabulary."""
    cache = args.cache / f"n{args.per_module}-t{args.test_per_module}-s{args.seed}"
    generate_sample(cache, args.modules, args.per_module, 1000, args.seed, splits=(*TRAIN_SPLITS, INTERPOLATE),
                    test_per_module=args.test_per_module)
    train = {f"{s}/{m}": open_dataset(cache / s / m) for s in TRAIN_SPLITS for m in args.modules}
    tests = [open_dataset(cache / INTERPOLATE / m) for m in args.modules]
    eval_sets = [full_set(INTERPOLATE, m, ds) for m, ds in zip(args.modules, tests)]
    return train, eval_sets, build_vocab([*train.values(), *tests])


def two_variable_data(args):
    """The two-variable train split, test eval sets per expression type (`--test-per-module` each)."""
    cache = args.cache / f"two_variable-n{args.size}-s{args.seed}"
    if not (cache / TEST / "manifest.json").is_file():
        write_two_variable(cache, seed=args.seed, size=args.size, test_fraction=0.1, rows_per_shard=4000)
    train, test = open_dataset(cache / TRAIN), open_dataset(cache / TEST)
    by_type: dict[str, list] = {t: [] for t in TYPES}
    for row in iter_rows(test, columns=("question", "answer", "module")):
        if len(by_type[row["module"]]) < args.test_per_module:
            by_type[row["module"]].append((row["question"], row["answer"]))
    return {TRAIN: train}, [EvalSet(TEST, t, rows) for t, rows in by_type.items()], build_vocab([train, test])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="mathematics", choices=["mathematics", "two_variable"])
    parser.add_argument("--preset", default="tp_transformer_tiny", help="a registered model preset")
    parser.add_argument("--model", default="tiny", choices=sorted(SIZES), help="sizes over the preset's")
    parser.add_argument("--modules", nargs="+", default=CANDIDATES)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--lr", type=float, default=None, help="default: the params file's train.lr")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--schedule", default=None, choices=["constant", "inverse_sqrt", "cosine"],
                        help="default: the params file's train.schedule")
    parser.add_argument("--pool-batches", type=int, default=None, help="default: the params file's; 1 = random")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-module", type=int, default=3000, help="problems per module and training split")
    parser.add_argument("--test-per-module", type=int, default=200, help="held-out problems per module or type")
    parser.add_argument("--size", type=int, default=30000, help="two-variable problems in all (train + test)")
    parser.add_argument("--cache", type=Path, default=REPO / "results/benchmarks/screen_data")
    parser.add_argument("--params", type=Path, default=REPO / "workflow/configs/cpu.yaml",
                        help="train: settings not set here")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=Path, default=None, help="default results/benchmarks/module_screen-<label>.json")
    args = parser.parse_args()

    load = mathematics_data if args.experiment == "mathematics" else two_variable_data
    train_sets, eval_sets, vocab = load(args)

    config = cpu_run(params_train(args.params), args.steps, args.threads, log_every=min(50, args.eval_every),
                     **given(lr=args.lr or None, batch_size=args.batch_size, pool_batches=args.pool_batches,
                             schedule=args.schedule))
    model_cfg = resolve_model_config(args.preset, SIZES[args.model])
    print(f"{args.preset} ({args.model}), {args.experiment}: {sum(ds.rows for ds in train_sets.values())} training "
          f"problems, {len(eval_sets)} eval sets; {config.steps} steps of {config.batch_size}, lr {config.lr}, "
          f"warm-up {config.warmup_steps}, {config.schedule} schedule", flush=True)
    recorder = Recorder(every=args.eval_every)
    recorder.probe = module_accuracy(eval_sets, vocab, 30, recorder, started=time.perf_counter())
    torch.set_num_threads(args.threads)
    train(preset_run("screen", args.seed, model_cfg, config, train_sets, vocab), [recorder])
    points = [{"step": p["step"], "loss": p["loss"], "seconds": p["wall_seconds"], "accuracy": p["accuracy"]}
              for p in recorder.probed]

    out = args.out or REPO / f"results/benchmarks/module_screen-{args.label or args.preset}.json"
    write_report(out, {"label": args.label, "argv": sys.argv[1:], **stamp(), "preset": args.preset,
                       "model": args.model, "train": dataclasses.asdict(config), "points": points})
    print_table(points)
    print(f"-> {out}")


def print_table(points: list[dict]) -> None:
    rows = [[m, *(f"{100 * p['accuracy'][m]:.0f}" for p in points)] for m in points[-1]["accuracy"]]
    rows += [["loss", *(f"{p['loss']:.3f}" for p in points)], ["seconds", *(f"{p['seconds']:.0f}" for p in points)]]
    print("\n" + markdown_table(["module", *(str(p["step"]) for p in points)], rows))


if __name__ == "__main__":
    main()
