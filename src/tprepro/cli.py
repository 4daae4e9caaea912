"""`tprepro` command line: one sub-command per pipeline stage.

The stages come from the experiment registry (tprepro.experiments): each experiment's
`cli.py` declares its sub-commands. Snakemake rules and DVC stages run exactly these
commands, with paths as arguments and settings read from the params file. Imports are
lazy so that the CLI starts fast and the data stage also runs in the generation venv.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
import sys

from tprepro import audit
from tprepro.errors import TpreproError
from tprepro.params import default_params_path
from tprepro.report.offline_plots import DEFAULT_TEMPLATE


def cmd_validate(args) -> None:
    from tprepro.params import load_params

    load_params(args.params)  # the same checks Snakemake and every stage run, models included
    print(f"{args.params}: OK")


def cmd_plan(args) -> None:
    from tprepro.plan.cli import run_plan

    run_plan(args)


def cmd_models(args) -> None:
    """Every preset's parameter count: sequence archs for --vocab-size symbols, N2F archs for
    MathQA-sized vocabularies."""
    from tprepro.models.registry import REFERENCE_SIZES, list_presets, preset_parameters, resolve_model_config

    n2f_sizes = REFERENCE_SIZES["n2f"]
    groups = [("seq2seq", {"vocab_size": args.vocab_size}, f"vocabulary {args.vocab_size}"),
              ("n2f", n2f_sizes, ", ".join(f"{k} {v}" for k, v in n2f_sizes.items()))]
    for task, sizes, label in groups:
        print(f"{'preset':<28} {'arch':<30} {'parameters':>12}   ({label})")
        for preset in sorted(list_presets(task)):
            arch = resolve_model_config(preset, {}, where=preset).arch
            print(f"{preset:<28} {arch:<30} {preset_parameters(preset, **sizes):>12,}")
        print()


def cmd_plots_template(args) -> None:

    from tprepro.report.offline_plots import write_template

    print(f"offline plots template (Vega, Vega-Lite, vega-embed inline) -> {write_template(Path(args.out))}")


def cmd_dvc_yaml(args) -> None:
    from tprepro.dvc_yaml import generate

    if args.out == "-":
        sys.stdout.write(generate())
        return
    from tprepro.io import atomic_write_text

    atomic_write_text(Path(args.out), generate())
    print(f"dvc.yaml generated from the stage registry -> {args.out}")


def cmd_dvc_commit(args) -> int:
    from tprepro.dvc_commit import commit

    return commit()


def cmd_status(args) -> None:
    from tprepro.train.progress import status_report

    print(status_report(Path(args.logs), args.all))


def cmd_compare(args) -> None:
    from tprepro.compare import compare

    print(compare(Path("."), args.experiment or None, args.num))


def cmd_ui_links(args) -> None:
    from tprepro.experiments import mlflow_experiment, tracked_experiments
    from tprepro.params import load_params
    from tprepro.tracking.links import ui_links
    from tprepro.tracking.store import tracking_uri

    params = load_params(args.params)
    names = [mlflow_experiment(params, name).name for name in tracked_experiments()]
    print("\n".join(ui_links(names, tracking_uri(), args.ui)))


def cmd_predict(args) -> None:
    from pathlib import Path

    from tprepro.predict import main as predict

    predict(Path(args.model_dir), args.question, args.file, args.json, args.batch_size, args.max_length, args.device)


EPILOG = ("Stages normally run through `make run` or `snakemake`, which pass every path; "
          "`tprepro STAGE --help` shows one stage's options and an example.")


def build_parser() -> argparse.ArgumentParser:
    from tprepro.experiments import experiments

    from tprepro import __version__

    parser = argparse.ArgumentParser(prog="tprepro", description=__doc__.splitlines()[0], epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"tprepro {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="STAGE", title="stages and tools")

    def add(name: str, help_: str, example: str, func, processes=None) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_, epilog=f"example:\n  {example}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--params", default=default_params_path(),
                       help="params file (default: $TPREPRO_PARAMS, else params.yaml)")
        p.set_defaults(func=func, data_parallel=processes)
        return p

    add("validate", "check the params file and every model's settings", "tprepro validate --params params.yaml",
        cmd_validate)
    from tprepro.plan.cli import plan_arguments

    plan_arguments(add("plan", "price a params file: every job's work, time per device kind and disk; GPU-hours, "
                       "CPU-hours, wall time, SLURM runtimes (docs/plan.md)",
                       "tprepro plan --params workflow/configs/paper.yaml --device h100 --gpus 8", cmd_plan))
    for experiment in experiments().values():
        for stage in experiment.stages:
            stage.arguments(add(stage.name, stage.help, experiment.example(stage), stage.run, stage.processes))

    p = sub.add_parser("predict", help="answer questions with a trained model",
                       description="Answer questions with a trained model (one per argument, or per line of --file).",
                       epilog="examples:\n  tprepro predict --model-dir mathematics/models/transformer-s1 'What is 2 + 3?'\n"
                              "  tprepro predict --model-dir n2f/models/algolisp/tp_n2f-s1 --json --file -  # a problem per line of stdin",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("question", nargs="*", help="questions (default: one per line of --file)")
    p.add_argument("--model-dir", required=True, help="a trained model's directory (model.pt, train_metrics.json)")
    p.add_argument("--file", help="read questions from this file, one per line (- for stdin)")
    p.add_argument("--json", action="store_true", help="one JSON object per line instead of 'question | answer'")
    p.add_argument("--batch-size", type=int, default=64, help="questions decoded at once (default 64)")
    p.add_argument("--max-length", type=int, default=64, help="answer characters (N2F: tuples) at most (default 64)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    p.set_defaults(func=cmd_predict, data_parallel=None)

    p = sub.add_parser("plots-template", help="write the offline page template `dvc plots show` uses",
                       description="Write the page template (Vega inline) that lets `dvc plots show` draw offline.",
                       epilog="example:\n  tprepro plots-template  # .dvc/offline_plots.html, named in .dvc/config",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(DEFAULT_TEMPLATE), help="where to write it (default: %(default)s)")
    p.set_defaults(func=cmd_plots_template, data_parallel=None)

    p = sub.add_parser("dvc-yaml", help="write dvc.yaml from the stage registry (the experiments' Stage declarations)",
                       description="Write dvc.yaml from the stage registry: each stage's command, data, "
                                   "outputs, source files and params keys as its experiment declares them.",
                       epilog="example:\n  tprepro dvc-yaml --out dvc.yaml  # what `make dvc-yaml` runs",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="-", help="the file to write (default: standard output)")
    p.set_defaults(func=cmd_dvc_yaml, data_parallel=None)

    p = sub.add_parser("dvc-commit", help="record in dvc.lock what Snakemake built (a damaged dvc.lock moved aside)",
                       description="Record in dvc.lock the outputs Snakemake built, so that `dvc status` agrees "
                                   "with it; a dvc.lock that DVC cannot read (an interrupted commit) is moved "
                                   "aside first and every stage recorded again from its outputs, rebuilding nothing.",
                       epilog="example:\n  tprepro dvc-commit  # what `make dvc-commit` runs",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=cmd_dvc_commit, data_parallel=None)

    p = sub.add_parser("status", help="each running training job's step, rate and time left, from its log",
                       description="Each training job in progress: its step, steps/s and time left, as the "
                                   "last line of its progress log under --logs/progress says (a line every "
                                   "half minute; every training writes one, however it was started).",
                       epilog="examples:\n  tprepro status  # while `make run`, snakemake or dvc trains\n"
                              "  tail -f logs/progress/tprepro-mathematics/transformer-s1.log  # follow one job",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--logs", default="logs", help="the log folder holding progress/ (default: %(default)s)")
    p.add_argument("--all", action="store_true", help="finished jobs too")
    p.set_defaults(func=cmd_status, data_parallel=None)

    p = sub.add_parser("compare", help="DVC experiments side by side: every headline metric, the settings that differ",
                       description="DVC experiments side by side (dvc.api.exp_show): a column per experiment (the "
                                   "workspace, the commit, its experiments), a row per headline metric and per "
                                   "setting of params.yaml whose values differ between them.",
                       epilog="examples:\n  tprepro compare  # after `dvc exp run -n longer -S train.steps=2000`\n"
                              "  tprepro compare baseline longer  # these two only",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", nargs="*", help="experiments or revisions to show, in this order (default: all)")
    p.add_argument("--num", type=int, default=1, help="experiments of the last NUM commits (default: %(default)s)")
    p.set_defaults(func=cmd_compare, data_parallel=None)

    p = sub.add_parser("ui-links", help="each experiment's training runs in the MLflow UI: the address to open",
                       description="Print, for each experiment in the MLflow store, the UI address of its training "
                                   "runs listed flat (sorted by name, the training view): tick two and press "
                                   "Compare. The store: $MLFLOW_TRACKING_URI, else mlflow.db here.",
                       epilog="example:\n  tprepro ui-links  # what `make ui` prints first (UI_PORT: --ui with its port)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--params", default=default_params_path(),
                   help="params file naming the MLflow experiments (default: $TPREPRO_PARAMS, else params.yaml)")
    p.add_argument("--ui", default="http://127.0.0.1:5000",
                   help="where `mlflow ui` serves the local store (default: %(default)s)")
    p.set_defaults(func=cmd_ui_links, data_parallel=None)

    p = sub.add_parser("models", help="every architecture preset with its parameter count",
                       description="List every architecture preset with its parameter count.")
    p.add_argument("--vocab-size", type=int, default=72, help="the paper's 72 symbols by default")
    p.set_defaults(func=cmd_models, data_parallel=None)
    return parser


def _data_parallel_workers(args) -> int:
    """How many data-parallel workers this invocation should relaunch as (1: train here)."""
    if args.data_parallel is None or "WORLD_SIZE" in os.environ:  # not a training stage, or already a worker
        return 1
    from tprepro.train.distributed import process_count

    return process_count(args.data_parallel(args))


def refuse_unknown_stage(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A misspelt stage gets one line with the closest name, instead of argparse's list of them all."""
    from tprepro.errors import suggestion

    stage = next((arg for arg in argv if not arg.startswith("-")), None)
    names = next(action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    if stage is not None and stage not in names:
        parser.exit(2, f"tprepro: error: no stage {stage!r}{suggestion(stage, names)} "
                       f"(`tprepro --help` lists them)\n")


def warn_if_foreign_install(cwd: Path) -> None:
    """Warn when `cwd` is a checkout whose src/tprepro is not the package running (a copied checkout
    whose venv still points at the original: its edits would not run, and provenance would lie)."""
    checkout = cwd / "src" / "tprepro"
    running = Path(__file__).resolve().parent
    if checkout.is_dir() and checkout.resolve() != running:
        print(f"WARNING: tprepro runs from {running}, not from this checkout's {checkout}; "
              f"`make install` here installs this checkout's code", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    from tprepro.train.preemption import REQUEUE_EXIT, Preempted

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    refuse_unknown_stage(parser, argv)
    args = parser.parse_args(argv)
    if os.environ.get(audit.AUDIT_LOG):  # the tests' record of what the command runs and reads
        audit.start(args.command, sys.argv[1:] if argv is None else argv, os.environ[audit.AUDIT_LOG])
    warn_if_foreign_install(Path.cwd())
    errors: list[str] = []

    def run() -> int:
        try:
            workers = _data_parallel_workers(args)
            if workers > 1:  # the same command line, as that many workers (no flag can be forgotten)
                from tprepro.train.distributed import launch

                return launch(argv, workers)
            return args.func(args) or 0  # a sub-command may return its own exit status
        except TpreproError as exc:
            errors.append(str(exc))
            print(f"tprepro {args.command}: error: {exc}", file=sys.stderr)
            return 2
        except Preempted as exc:  # checkpoint written: the workflow re-runs the job, which resumes
            print(f"tprepro {args.command}: {exc}", file=sys.stderr)
            return REQUEUE_EXIT

    if getattr(args, "checkpoints", None):  # a training command: Snakemake requeues only preemption
        from tprepro.train.folder_lock import FolderBusy, WrongFolder, claim_training_folders, trainer_lock
        from tprepro.train.requeue import run_guarded

        def guarded() -> int:
            return run_guarded(args.command, Path(args.checkpoints), run,
                               lambda: errors[-1] if errors else f"exit status of {args.command}")

        if "RANK" in os.environ:  # a data-parallel worker: its launcher holds the folder's lock
            return guarded()
        with contextlib.ExitStack() as held:
            try:  # the run owns its model folder as it owns its checkpoint folder
                held.enter_context(claim_training_folders(Path(args.out), Path(args.checkpoints))
                                   if getattr(args, "out", None) else trainer_lock(Path(args.checkpoints)))
            except (FolderBusy, WrongFolder) as exc:  # refused before anything is read or written, not recorded as a failure
                print(f"tprepro {args.command}: error: {exc}", file=sys.stderr)
                return 2
            return guarded()
    return run()


if __name__ == "__main__":
    sys.exit(main())
