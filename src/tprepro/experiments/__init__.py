"""The papers' experiments, one package each, found by name (fairseq's task registry is the model).

An experiment is a folder `experiments/<name>/` whose `cli.py` defines `EXPERIMENT`, an
`Experiment`: its name, its stages (the `tprepro` sub-commands that Snakemake and DVC run)
and the params sections holding its models. The CLI and `tprepro validate` read them from
here, so adding an experiment touches no shared module (see ARCHITECTURE.md).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.resources
import pkgutil
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from tprepro.data.codecs import CodecKind
from tprepro.data.codecs import register as register_codec
from tprepro.params import ExperimentRules, read_yaml, register_rules
from tprepro.params.layered import Layered
from tprepro.train.files import MODEL_FILE, TRAIN_METRICS
from tprepro.work import Work, fixed

Runner = Callable[[argparse.Namespace], "int | None"]


@dataclass(frozen=True)
class DvcStage:
    """A Stage as dvc.yaml runs it: its entry there less the source deps and params keys, which
    `tprepro dvc-yaml` adds from the Stage (`${item.<key>}` are matrix or foreach values)."""

    cmd: str  # the `tprepro` command line, paths and all
    name: str = ""  # the dvc.yaml stage (and Snakemake rule); default: the Stage's name with underscores
    matrix: dict[str, str | tuple[str, ...]] | None = None  # {key: params reference or values}
    foreach: str | None = None  # a params reference; ${item} is each value
    foreach_key: bool = False  # foreach over a mapping: ${key} is each entry's name
    foreach_as: str | None = None  # the Snakemake rule's wildcard for ${item} / ${key} (default: item / key)
    deps: tuple[str, ...] = ()  # the data it reads
    # Every output is cached, metrics and plots too: a DVC experiment records their hashes, so
    # `dvc exp show`, `dvc metrics diff` and `dvc plots diff` read each experiment's own, and `dvc exp apply`
    # restores them with its models (tests/workflow/test_dvc_experiments.py).
    outs: tuple[str, ...] = ()  # data and models
    results: tuple[str, ...] = ()  # what a user reads: tables, figures, run summaries
    metrics: tuple[str, ...] = ()  # `dvc metrics show` files
    plots: tuple[dict, ...] = ()  # `dvc plots show` files with their chart (learning_curve, model_curves, ...)

    @property
    def rule_names(self) -> dict[str, str]:
        """The Snakemake wildcard names of its foreach value and key (tprepro.params.references.wildcard_of)."""
        return {"item": self.foreach_as or "item", "key": self.foreach_as or "key"}

    @property
    def declared(self) -> tuple[str, ...]:
        """The paths its entry names: outs, results, metrics and plots."""
        return (*self.outs, *self.results, *self.metrics, *(path for plot in self.plots for path in plot))

    @property
    def companions(self) -> tuple[str, ...]:
        """The files written beside its Digested outputs: their digests (tprepro.io.record_digest) and the rest."""
        return tuple(companion for path in self.declared for companion in _companions(path))

    @property
    def written(self) -> tuple[str, ...]:
        """Every path it writes: outs, results, metrics and plots, each followed by its companions."""
        return tuple(written for path in self.declared for written in (path, *_companions(path)))

    @property
    def keeps_outputs(self) -> bool:
        """Whether a failed run keeps the outputs it found (DVC's `persist`): a stage without data or model outs,
        whose outputs a user reads (tables, evaluations, figures). A data or model stage keeps DVC's run cache
        instead; what its failed run finished stays in its resumable state (shards, checkpoints)."""
        return not self.outs


class Digested(str):
    """An output path whose writer records its SHA-256 beside it (`<path>.sha256`, tprepro.io.record_digest) and
    whose readers refuse it when the two differ: the digest is an output of the same stage, so DVC's restores
    (`checkout`, `exp apply`, `pull`) bring it back with the file. `beside`: other files its writer puts next to
    it, outputs of the stage too (an evaluation's role sharpness)."""

    beside: tuple[str, ...]

    def __new__(cls, path: str, beside: tuple[str, ...] = ()) -> "Digested":
        digested = super().__new__(cls, path)
        digested.beside = tuple(beside)
        return digested


def _companions(path: str) -> tuple[str, ...]:
    """The files a stage writes beside output `path`: a Digested path's digest and `beside` files; else none."""
    return (digest_of(path), *path.beside) if isinstance(path, Digested) else ()


def role_sharpness_file(evaluation: str) -> str:
    """The role-sharpness file an evaluate stage writes beside its evaluation CSV (tprepro.evaluate.files)."""
    from tprepro.evaluate.files import role_sharpness_path

    return str(role_sharpness_path(evaluation))


def digest_of(path: str) -> str:
    """The digest file of output `path` (tprepro.io.digest_path, as a DVC or Snakemake path)."""
    from tprepro.io import DIGEST_SUFFIX

    return f"{path}{DIGEST_SUFFIX}"


class Reported(str):
    """An output path (of DvcStage.outs, results, metrics or plots) that the Snakemake report also
    shows, under the caption workflow/report/<caption>.rst; a folder shows its PNG figures."""

    caption: str
    category: str | None  # the report's section; None: the experiment's report_category

    def __new__(cls, path: str, caption: str, category: str | None = None) -> "Reported":
        reported = super().__new__(cls, path)
        reported.caption, reported.category = caption, category
        return reported


def trained(model_dir: str) -> tuple[str, str]:
    """A trained model's files in `model_dir` (a DVC path): what its evaluate and interpret stages read."""
    return f"{model_dir}/{MODEL_FILE}", f"{model_dir}/{TRAIN_METRICS}"


def learning_curve(path: str, experiment: str) -> dict:
    """A run's learning_curve.csv as a DVC plot: held-out exact match per checkpoint (`experiment`:
    the title's first words, e.g. "Mathematics Dataset")."""
    return {path: {"template": "exact_match_curve", "x": "step", "y": "heldout_exact_match",
                   "x_label": "training step", "y_label": "held-out exact match",
                   "title": f"{experiment}: ${{item.model}} seed ${{item.seed}}, held-out exact match per checkpoint"}}


def accuracy_bars(path: str, per: str, experiment: str) -> dict:
    """A run's evaluation CSV as a DVC plot: one bar per module (or type, `per`)."""
    return {path: {"template": "accuracy_bars", "x": "accuracy", "y": "module", "y_label": per,
                   "title": f"{experiment}: ${{item.model}} seed ${{item.seed}}, exact-match accuracy per {per}"}}


def model_curves(path: str, title: str) -> dict:
    """Every run's learning curve of an experiment (report.plots.write_curves) as one DVC plot: a
    colour per model (the figures' colours) and a dash per seed, or, comparing revisions, a colour per
    revision (as in every chart) and a dash per model (.dvc/plots/model_curves.json)."""
    return {path: {"template": "model_curves", "x": "step", "y": "heldout_exact_match",
                   "x_label": "training step", "y_label": "held-out exact match", "title": title}}


def model_bars(path: str, per: str, score: str, title: str) -> dict:
    """Scores per model, `per` (module, type or measure) and split (report.plots.write_bars) as one
    DVC plot: a panel per split, a bar per model in the figures' colours, or, comparing revisions, a bar
    per revision in its colour (.dvc/plots/model_bars.json)."""
    return {path: {"template": "model_bars", "x": "accuracy", "y": "module", "x_label": score,
                   "y_label": per, "title": title}}


@dataclass(frozen=True)
class Stage:
    """One `tprepro <name>` sub-command."""

    name: str  # sub-command, e.g. "two-variable-train"
    help: str  # one line for `tprepro --help`
    arguments: Callable[[argparse.ArgumentParser], None]  # adds the stage's options
    run: Runner  # does the work (imports heavy modules lazily); returns an exit status or None
    # Source files and folders (relative to src/tprepro/) whose edits change this stage's outputs:
    # Snakemake takes them as one input, a digest file per stage (workflow.code_digest); the
    # generated dvc.yaml lists them as deps.
    code: tuple[str, ...] = ()
    # Params keys whose values decide this stage's outputs: a change reruns it. `{name}` is a rule
    # wildcard (DVC's ${item.name}); a Layered entry is a shared section read under the experiment's
    # overrides (params/layered.py). The rules take them as params (workflow.settings); the
    # generated dvc.yaml lists them (params_keys).
    params: tuple[str | Layered, ...] = ()
    # Data-parallel training: the number of processes this invocation asks for (params-dependent);
    # with more than one, the CLI relaunches the same argv as that many workers.
    processes: Callable[[argparse.Namespace], int] | None = None
    # Its dvc.yaml stages (usually one): `tprepro dvc-yaml` writes dvc.yaml from these. The first
    # one's command, with the experiment's example_items, is the example its --help shows.
    dvc: tuple[DvcStage, ...] = ()
    # The params `cluster:` family its jobs request SLURM resources from (data, vocab, train, evaluate,
    # tables; workflow.stage_resources); None: its jobs run where Snakemake runs (a local rule).
    family: str | None = None
    # What one job does under the params, given its matrix values (tprepro.work): what `tprepro plan`
    # prices and the SLURM runtimes are derived from.
    work: Callable[[dict, dict], Work] = fixed

    @property
    def rule(self) -> str:
        """Its Snakemake rule's name (and dvc.yaml stage's, unless a DvcStage names its own)."""
        return self.name.replace("-", "_")

    @property
    def params_keys(self) -> tuple[str, ...]:
        """Its params keys, each Layered entry expanded (Layered.params_keys)."""
        return tuple(key for entry in self.params
                     for key in (entry.params_keys() if isinstance(entry, Layered) else (entry,)))


@dataclass(frozen=True)
class Experiment:
    name: str  # package name under experiments/
    title: str  # the paper and what is reproduced
    stages: tuple[Stage, ...]
    # The models the experiment builds: {dotted params path of a models mapping: names trained}
    # (every one is resolved when params are loaded, so a bad preset stops before any job runs).
    models: Callable[[dict], dict[str, list[str]]] = field(default=lambda params: {})
    # Codecs of the experiment's own (data/codecs.py), registered when the experiments are listed,
    # so that loading and `tprepro predict` handle its exported models.
    codecs: tuple[CodecKind, ...] = ()
    # Cross-key rules of the experiment's params sections (beyond the schema), run by every
    # validation of params.yaml; raises TpreproError naming the file and key.
    check: Callable[[dict, str], None] = field(default=lambda params, source: None)
    # The values its --help examples give the DVC commands' ${references}, e.g. {"item.model": "ut",
    # "item.seed": "1"}: names params.yaml defines.
    example_items: dict[str, str] = field(default_factory=dict)
    # The report's section for the experiment's Reported outputs (results/report.html, snakemake --report).
    report_category: str = ""
    # Whether it has an MLflow experiment (and a parent run per invocation): every paper's; not the report's.
    tracked: bool = True

    def example(self, stage: Stage) -> str:
        """A typical invocation of `stage`: its first DVC command with example_items filled in."""
        return re.sub(r"\$\{([^}]+)\}", lambda m: self.example_items[m.group(1)], stage.dvc[0].cmd)


# Code every stage of a kind runs, whatever the experiment (relative to src/tprepro/).
COMMON = ("params", "io.py", "errors.py")
PIPELINE = ("pipeline.py", "train/files.py")  # the stages' shared skeletons, with the file names they import
TRAINING = (*COMMON, "data", "models", "train", "evaluate", "pipeline.py", "training.py", "tracking", "invocation.py")
EVALUATION = (*COMMON, "data", "models", "evaluate", "train", "report", "pipeline.py", "tracking", "invocation.py")
MODEL_CODE = ("models", "data/tuple_ids.py")  # the models package with what it imports: a table resolving presets
PUBLISHING = (*COMMON, "report", "evaluate/__init__.py", "evaluate/curves.py", "train/callbacks.py", *PIPELINE,
              "tracking", "invocation.py", "figures.py")
INTERPRETING = (*COMMON, "data", "models", "evaluate", "interpret", "train/checkpoint.py", "train/callbacks.py",
                *PIPELINE, "tracking", "invocation.py", "figures.py")


@functools.cache
def experiments() -> dict[str, Experiment]:
    """Every experiment package's EXPERIMENT, by name, the papers' before the report's (importing only
    their light cli modules)."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.ispkg:
            experiment = importlib.import_module(f"{__name__}.{info.name}.cli").EXPERIMENT
            found[experiment.name] = experiment
            for kind in experiment.codecs:
                register_codec(kind)
            register_rules(experiment.name, ExperimentRules(experiment.check, experiment.models,
                                                            _own_schema(info.name)))
    return dict(sorted(found.items(), key=lambda item: not item[1].tracked))  # the papers first, then the report


def _own_schema(package: str) -> dict:
    """The experiment's params sections (experiments/<package>/schema.yaml), or none."""
    schema = importlib.resources.files(f"{__name__}.{package}").joinpath("schema.yaml")
    return read_yaml(str(schema)) if schema.is_file() else {}


# Stages' command-line options, each declared once: shared ones by name, a stage's own with its help.
@dataclass(frozen=True)
class Option:
    """One option of a stage's command line, `--<name>` with dashes for underscores."""

    help: str  # what --help says
    type: Callable[[str], Any] = str
    many: bool = False  # takes one or more values (a list)
    default: Any = None  # None: the option is required (an input's default is where the pipeline writes it)
    choices: tuple[str, ...] | None = None

    def at(self, default: Any) -> "Option":
        """This option with `default`: for an input, the pipeline's path of it, so the dvc.yaml
        command (and a user's) need not name it."""
        return replace(self, default=default)


# Options several stages take, declared once: a stage's `options(...)` names the ones it takes.
SHARED_OPTIONS = {
    "model_dir": Option("a trained model's directory (model.pt)"),
    "models_dir": Option("directory of the trained models"),
    "train": Option("the train dataset directory"),
    "test": Option("the test dataset directory"),
    "vocab": Option("the vocabulary file written by the data stage"),
    "out": Option("the output directory (replaced only when complete)"),
    "checkpoints": Option("directory for the resumable checkpoint"),
    "heldout": Option("held-out dataset directory: a sample is scored at every checkpoint (learning curve)"),
}


def options(*shared: str, **own: str | Option) -> Callable[[argparse.ArgumentParser], None]:
    """A stage's `arguments`: the `shared` options (SHARED_OPTIONS, in that order), then its `own`
    ({name: help or Option}; an own option of a shared name replaces it)."""
    declared = {name: SHARED_OPTIONS[name] for name in shared}
    declared.update({name: Option(spec) if isinstance(spec, str) else spec for name, spec in own.items()})

    def add(parser: argparse.ArgumentParser) -> None:
        for name, option in declared.items():
            described = option.help if option.default is None else f"{option.help} (default: {shown(option)})"
            parser.add_argument(f"--{name.replace('_', '-')}", type=option.type, nargs="+" if option.many else None,
                                required=option.default is None, default=option.default, choices=option.choices,
                                help=described)
    return add


def shown(option: Option) -> str:
    """An option's default as a command line writes it."""
    return " ".join(map(str, option.default)) if option.many else str(option.default)


def train_arguments(models: str, seeds: str, **own: str | Option) -> Callable[[argparse.ArgumentParser], None]:
    """One model (named under `models` in params) trained with one of `seeds` (a params key), on a
    train dataset directory, to --out and --checkpoints; `own`: further options (see `options`)."""
    return options("train", "vocab", "checkpoints", **{"model": f"a model name under {models} in the params file",
                   "seed": Option(f"training seed (one of {seeds})", type=int),
                   "out": f"directory for {MODEL_FILE} and {TRAIN_METRICS}", **own})


def test_arguments(out: str, **own: str | Option) -> Callable[[argparse.ArgumentParser], None]:
    """A trained model scored on a test dataset directory, written to --out (`out`: its help)."""
    return options("model_dir", "test", out=out, **own)


# The files every table stage writes: option (without --, dashes as underscores) -> help.
TABLE_OUTPUTS = {"table": "the table's path without suffix: TABLE.csv, TABLE.md (with its caption) and TABLE.html "
                          "(the page the Snakemake report shows)",
                 "metrics": "DVC metrics file (JSON, numbers only)"}
TABLE_FORMATS = {"table_csv": ".csv", "table_md": ".md", "table_html": ".html"}  # the files --table names


def table_files(table: str, caption: str) -> tuple[str, ...]:
    """The files of a table stage's --table `table` (TABLE_FORMATS); its CSV and HTML page are in the
    Snakemake report under `caption`."""
    return Reported(f"{table}.csv", caption), f"{table}.md", Reported(f"{table}.html", caption)


def plot_data(path: str, what: str) -> Option:
    """A table stage's output `path` that a DVC plot draws (report.plots), `what` it holds: the
    pipeline's path is its default, so that dvc.yaml's command need not name it."""
    return Option(f"{what}, the DVC plot's data (CSV)").at(path)


def table_arguments(models: bool = True, evals: str = "the evaluation CSVs", located: dict[str, str] | None = None,
                    **outputs: str) -> Callable[[argparse.ArgumentParser], None]:
    """A table stage's inputs (evaluations, and the trained models unless `models` is False) and its
    output files, each named by the caller: TABLE_OUTPUTS plus `outputs` ({option: help}).
    `located`: the pipeline's paths of the inputs ({"eval_dir": ..., "models_dir": ...}), their defaults."""
    inputs = {**({"models_dir": SHARED_OPTIONS["models_dir"]} if models else {}),
              "eval_dir": Option(f"directory of {evals}")}
    inputs = {name: option.at((located or {}).get(name)) for name, option in inputs.items()}
    return options(**inputs, **TABLE_OUTPUTS, **outputs)


def table_outputs(args: argparse.Namespace, *extra: str) -> dict[str, "Path"]:
    """The output paths `table_arguments` took: table_csv, table_md and table_html (from --table,
    whose suffix, if it is one of theirs, is dropped), metrics, and `extra` ({option: Path})."""
    from pathlib import Path

    table = Path(args.table)
    stem = table.with_suffix("") if table.suffix in TABLE_FORMATS.values() else table
    return {**{name: stem.with_name(stem.name + suffix) for name, suffix in TABLE_FORMATS.items()},
            **{name: Path(getattr(args, name)) for name in ("metrics", *extra)}}


def tracked_experiments() -> list[str]:
    """The experiments with an MLflow experiment of their own, by name."""
    return [name for name, experiment in experiments().items() if experiment.tracked]


def mlflow_experiment(params: dict, name: str):
    """Experiment `name`'s MLflow experiment: `<mlflow.prefix>-<name>` (dashes), described by its title
    in plain text (the UI shows an experiment's description as written, Markdown marks included)."""
    from tprepro.params.reads import for_the_record
    from tprepro.tracking.store import Experiment as Tracked

    experiment = experiments()[name]
    description = (f"{experiment.title}. One run per trained model and seed (params, step metrics, "
                   f"evaluation per module, datasets, the model under Logged models, named "
                   f"<experiment>-<run>), children of one pipeline run per invocation; the tables run "
                   f"holds the tables and figures under Artifacts > results and their numbers as "
                   f"table.<model>.<column> metrics (over seeds). Made by tprepro.")
    settings = for_the_record(params["mlflow"])  # where the runs are recorded, not what a stage writes
    return Tracked(f"{settings['prefix']}-{name.replace('_', '-')}", description, settings["log_models"])


def stage(name: str) -> Stage:
    """The stage behind `tprepro <name>`."""
    return next(candidate for candidate in experiment_of(name).stages if candidate.name == name)


def experiment_of(name: str) -> Experiment:
    """The experiment declaring stage `name`."""
    for experiment in experiments().values():
        if any(candidate.name == name for candidate in experiment.stages):
            return experiment
    raise KeyError(name)


def code_files(name: str, root: str = "src/tprepro") -> list[str]:
    """The Python files of stage `name`'s code under `root` (a checkout's package folder), sorted."""
    from pathlib import Path

    files = set()
    for entry in stage(name).code:
        path = Path(root) / entry
        files.update(str(f) for f in (sorted(path.rglob("*.py")) if path.is_dir() else [path]))
    return sorted(files)


# Listing the experiments on import registers their codecs and settings rules with the core, so
# whoever imports any experiment module (stages, the Snakefile, benchmarks) validates params fully.
experiments()
