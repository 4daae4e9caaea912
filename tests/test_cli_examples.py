"""Every `example:` in `tprepro ... --help` parses and names models, seeds and paths that exist
after `make run` (params.yaml's model names and seeds; the paths the DVC stages read, write and
pass, as DVC itself resolves them from dvc.yaml, or files of the repository)."""

import argparse
import shlex
from pathlib import Path

import pytest
from dvc.repo import Repo

from tprepro.cli import build_parser
from tprepro.experiments import experiments
from tprepro.params import load_params

REPO = Path(__file__).resolve().parents[1]


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def examples() -> list[tuple[str, str]]:
    """(stage, example command line) for every example in a sub-command's --help."""
    found = []
    for name, sub in subparsers(build_parser()).items():
        for line in (sub.epilog or "").splitlines():
            if line.strip().startswith("tprepro "):
                found.append((name, line.strip()))
    return found


@pytest.fixture(scope="module")
def made_paths() -> set[str]:
    """Every path a DVC stage of the default pipeline reads or writes or passes on its command line
    (checkpoints are not outputs), templates resolved by DVC."""
    stages = Repo(str(REPO)).index.stages
    declared = {str(item.def_path) for stage in stages for item in (*stage.deps, *stage.outs)}
    passed = {word for stage in stages for word in shlex.split(getattr(stage, "cmd", "") or "") if "/" in word}
    return {path.rstrip("/") for path in declared | passed}


@pytest.fixture(scope="module")
def params_names() -> tuple[set[str], set[int]]:
    """The model names and training seeds params.yaml declares."""
    params = load_params(REPO / "params.yaml")
    models = {name for experiment in experiments().values()
              for names in experiment.models(params).values() for name in names}

    def seeds(node) -> set[int]:
        if isinstance(node, dict):
            return {s for key, value in node.items() for s in (value if key == "seeds" else seeds(value))}
        return set()

    return models, seeds(params)


def known_path(value: str, made: set[str]) -> bool:
    path = value.rstrip("/")
    return path in made or any(p.startswith(path + "/") for p in made) or (REPO / path).exists()


def test_every_subcommand_but_the_listing_shows_an_example():
    assert {name for name, _ in examples()} == set(subparsers(build_parser())) - {"models"}


@pytest.mark.parametrize("stage, line", examples(), ids=lambda x: x if " " not in x else "")
def test_example_parses_and_names_what_make_run_makes(stage, line, made_paths, params_names):
    argv = shlex.split(line, comments=True)[1:]
    args = build_parser().parse_args(argv)  # argparse exits (a failure here) on a bad option
    assert args.command == stage
    models, seeds = params_names
    if getattr(args, "model", None) is not None:
        assert args.model in models, f"{stage}: --model {args.model} is not a model of params.yaml"
    if getattr(args, "seed", None) is not None:
        assert args.seed in seeds, f"{stage}: --seed {args.seed} is no seed of params.yaml"
    values = [v for v in argv if not v.startswith("-") and v != stage]
    for value in values:
        if "/" in value or Path(value).suffix in (".yaml", ".json", ".csv", ".md", ".html", ".pt"):
            assert known_path(value, made_paths), f"{stage}: {value} is neither made by `make run` nor in the repo"
