"""The real Mathematics sample: the real mathematics_dataset generator through the project's data stage,
every asked module and split generated once into a cache folder, opened as the training stage opens it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tprepro.data.shards import Dataset, open_dataset, read_columns
from tprepro.data.vocab import Vocab, build_vocab
from tprepro.experiments.mathematics.data_stage import generate_python
from tprepro.experiments.mathematics.modules import TRAIN_MODULES, TRAIN_SPLITS

REPO = Path(__file__).resolve().parents[2]


def generate_sample(cache: Path, modules: list[str], per_module: int, rows_per_shard: int, seed: int,
                    splits=TRAIN_SPLITS, test_per_module: int = 1) -> None:
    """Write cache/<split>/<module> for every split and module that is not there yet.

    One generation interpreter runs the project's data stage for all missing datasets
    (one process: sympy's import is paid once).
    """
    missing = [(s, m) for s in splits for m in modules if not (cache / s / m / "manifest.json").is_file()]
    if not missing:
        return
    data_cfg = {"source": "generate", "release_root": None, "seed": seed, "train_per_module": per_module,
                "test_per_module": test_per_module, "rows_per_shard": rows_per_shard}
    script = (
        "import json, sys\n"
        "from tprepro.experiments.mathematics.data_stage import run_data_stage\n"
        "cfg, cache, todo = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])\n"
        "for split, module in todo:\n"
        "    run_data_stage(split, module, f'{cache}/{split}/{module}', cfg)\n"
        "    print(split, module, flush=True)\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    print(f"generating {len(missing)} datasets of {per_module} problems into {cache}", flush=True)
    subprocess.run([str(generate_python()), "-c", script, json.dumps(data_cfg), str(cache), json.dumps(missing)],
                   env=env, check=True)


def open_sample(cache: Path, modules: list[str]) -> dict[str, Dataset]:
    """The training datasets of `modules`, by `<split>/<module>`."""
    return {f"{s}/{m}": open_dataset(cache / s / m) for s in TRAIN_SPLITS for m in modules}


def all_rows(datasets: dict[str, Dataset]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Every (question, answer) row, and each question's module."""
    rows, module_of = [], {}
    for label, ds in datasets.items():
        for path in ds.files:
            table = read_columns(path, ("question", "answer"))
            questions = table.column("question").to_pylist()
            rows += zip(questions, table.column("answer").to_pylist())
            module_of.update(dict.fromkeys(questions, label.split("/")[1]))
    return rows, module_of


def training_sample(cache: Path, per_module: int, rows_per_shard: int, seed: int,
                    modules: list[str] | None = None) -> tuple[dict[str, Dataset], Vocab]:
    """The training splits of `modules` (default: every training module) in `cache/n<per_module>-r<rows>-s<seed>`,
    generated where missing, and their vocabulary."""
    modules = list(modules or TRAIN_MODULES)
    folder = cache / f"n{per_module}-r{rows_per_shard}-s{seed}"
    generate_sample(folder, modules, per_module, rows_per_shard, seed)
    datasets = open_sample(folder, modules)
    return datasets, build_vocab(list(datasets.values()))
