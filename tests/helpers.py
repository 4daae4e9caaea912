"""Small builders shared by tests (real parquet shards, real params files)."""

from __future__ import annotations

import os
import random
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from tprepro.experiments.mathematics.modules import difficulty_of
from tprepro.data import shards as shards_module

REPO = Path(__file__).resolve().parents[1]


def arithmetic_rows(n: int, seed: int, module: str = "arithmetic__add_or_sub", split: str = "train-easy"):
    """Hand-made add/sub problems in the dataset's schema (fast; not the real generator)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.randint(-99, 99), rng.randint(0, 99)
        op = rng.choice("+-")
        rows.append({"question": f"What is {a} {op} {b}?", "answer": str(a + b if op == "+" else a - b),
                     "module": module, "split": split, "difficulty": difficulty_of(split)})
    return rows


def generated_mathematics(tmp_path, monkeypatch, generate_python, modules, per_module: int, seed: int):
    """(datasets, vocabulary) of the real generator's train-easy problems of `modules`."""
    from tprepro.data.shards import open_dataset
    from tprepro.data.vocab import build_vocab
    from tprepro.experiments.mathematics.data_stage import run_data_stage

    monkeypatch.setenv("TPREPRO_GENERATE_PYTHON", generate_python)
    settings = {"source": "generate", "release_root": None, "seed": seed, "train_per_module": per_module,
                "test_per_module": 1, "rows_per_shard": 64}
    for module in modules:
        run_data_stage("train-easy", module, tmp_path / module, settings)
    datasets = [open_dataset(tmp_path / module) for module in modules]
    return datasets, build_vocab(datasets)


def varied_sums(n: int, seed: int) -> list[tuple[str, str]]:
    """(question, answer) sums with questions of 8 to 40 characters and answers of 1 to 9: lengths that pad
    a lot in one batch (packing tests)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        terms = [str(rng.randint(0, 10 ** rng.randint(1, 4))) for _ in range(rng.randint(2, 7))]
        rows.append((("What is " + " + ".join(terms) + "?")[:40], str(sum(map(int, terms)))))
    return rows


def write_dataset(directory: Path, rows: list[dict], rows_per_shard: int = 50, schema=None) -> Path:
    """`rows` as a dataset directory (Mathematics schema unless `schema` is given)."""
    shards = (rows[start : start + rows_per_shard] for start in range(0, len(rows), rows_per_shard))
    return shards_module.write_dataset(directory, shards, **({"schema": schema} if schema else {}), source="test")


def load_default_params() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text())


def micro_two_variable(params: dict) -> dict:
    """Shrink params' `two_variable:` section to seconds per stage (end-to-end tests); returns params."""
    section = params["two_variable"]
    section["data"].update(size=240, rows_per_shard=100)
    section["train"] = {"steps": 6, "batch_size": 8, "checkpoint_every": 3, "log_every": 3,
                        "pool_batches": params["train"]["pool_batches"]}  # the shared order, as before it was required
    for entry in section["models"].values():
        entry.update(d_model=16, n_heads=2, d_ff=32)
    return params


# Real release files the project cannot download (tests only): $TPREPRO_RELEASE_DATA, by default
# ../shared/data beside the checkout, holding mathqa/ and algolisp/ as the releases ship them.
RELEASE_DATA_ENV = "TPREPRO_RELEASE_DATA"
SHARED_DATA = Path(os.environ.get(RELEASE_DATA_ENV) or REPO.parent / "shared" / "data")
RELEASES = {"mathqa": "the MathQA release (Amini et al. 2019), https://math-qa.github.io/",
            "algolisp": "the AlgoLisp release (Polosukhin & Skidanov 2018), https://github.com/nearai/program_synthesis"}


def release_file(relative: str) -> Path:
    """The real release file `relative` (e.g. "mathqa/dev.json") under $TPREPRO_RELEASE_DATA. When it is
    absent the test is skipped with one line naming the file and where it is published; under CI=true
    it fails instead, so CI never loses these tests."""
    path = SHARED_DATA / relative
    if not path.is_file():
        message = (f"{path} is absent: {RELEASES[relative.split('/')[0]]}; "
                   f"point {RELEASE_DATA_ENV} at the folder holding mathqa/ and algolisp/")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def micro_n2f(params: dict, tasks: tuple[str, ...] = ()) -> dict:
    """Shrink params' `n2f:` section to seconds per stage and run only `tasks`; returns params.

    MathQA trains on the real release's dev split and is evaluated on its test split.
    """
    section = params["n2f"]
    section["tasks"] = list(tasks)
    section["train"].update(steps=4, batch_size=8, checkpoint_every=2, log_every=2)
    section["evaluate"].update(max_tuples=6)
    release = release_file if "mathqa" in tasks else SHARED_DATA.joinpath  # only a listed task needs the files
    section["mathqa"]["data"].update(train=str(release("mathqa/dev.json")), train_label="dev",
                                     test=str(release("mathqa/test.json")), test_label="test")
    section["algolisp"]["data"]["generate"].update(train=60, test=16)
    for task in ("mathqa", "algolisp"):
        for entry in section[task]["models"].values():
            entry.update(d_model=8, lstm_hidden=12, n_fillers=6, n_roles=4, d_filler=4, d_role=3,
                         d_relation=3, d_argument=3, d_position=2)
    return params


def micro_summarization(params: dict, datasets: tuple[str, ...] = ("xsum",)) -> dict:
    """Shrink params' `summarization:` section to seconds per stage, on `datasets` of the CI corpus
    (each in its own release format: xsum Hugging Face JSON lines, cnndm .story files, wikihow CSV,
    arxiv JSON lines) and two models (Transformer, TPT-d); returns params."""
    formats = {"xsum": "huggingface", "cnndm": "stories", "wikihow": "wikihow_csv", "arxiv": "arxiv_jsonl"}
    section = params["summarization"]
    section["corpus"].update(max_examples=240, test_fraction=0.25)  # about 15 test documents per dataset
    section["datasets"] = {name: {"format": formats[name], "path": None} for name in datasets}
    section["data"].update(vocab_size=200, max_source_tokens=24, max_target_tokens=8)
    section["train"].update(steps=4, batch_size=4, warmup_steps=2, checkpoint_every=2, log_every=2)
    section["evaluate"].update(max_documents=4, beam_size=2, max_summary_tokens=6)
    section["report"]["bootstrap"]["resamples"] = 50
    section["models"] = {"transformer": {"preset": "summarization_transformer_tiny"},
                         "tpt_d": {"preset": "summarization_tpt_d_tiny"}}
    for entry in section["models"].values():
        entry.update(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
    section["models"]["tpt_d"]["d_role"] = 8
    return params


def write_params(path: Path, params: dict) -> Path:
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


# Generated top-level folders and files, and caches anywhere: what a copy of the project leaves out.
_GENERATED_TOP = {".git", ".venv", ".venv-gen", "data", "mathematics", "logs", ".snakemake", "mlartifacts",
                  "two_variable", "n2f", "benchmarks"}
_GENERATED_RESULTS = {"tables", "figures", "n2f", "interpret", "summarization", "benchmarks", "screenshots"}
_CACHES = shutil.ignore_patterns("mlflow.db*", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache")


def _ignore(directory: str, names: list[str]) -> set[str]:
    skipped = set(_CACHES(directory, names))
    if Path(directory) == REPO:
        skipped |= _GENERATED_TOP & set(names)
    elif Path(directory) == REPO / "results":
        skipped |= _GENERATED_RESULTS & set(names)
    return skipped


def copy_project(dest: Path) -> Path:
    """The repository's tracked-looking files (no venvs, data or results) in `dest`."""
    shutil.copytree(REPO, dest, ignore=_ignore, symlinks=True, dirs_exist_ok=True)
    return dest


def readme_compare_line() -> list[str]:
    """README's `tprepro compare` line, as arguments."""
    (line,) = [line.split("#")[0].strip() for line in (REPO / "README.md").read_text().splitlines()
               if line.startswith("tprepro compare")]
    return shlex.split(line)


def experiment_name(params: dict, experiment: str = "mathematics") -> str:
    """The MLflow experiment holding `experiment`'s runs under `params`."""
    return f"{params['mlflow']['prefix']}-{experiment.replace('_', '-')}"


def tool_env(**extra) -> dict:
    """The environment for pipeline subprocesses: this interpreter's venv first on PATH."""
    import os
    import sys

    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("TPREPRO_PARAMS", None)  # each test project reads its own params.yaml
    env.update(extra)
    return env


SCREENSHOTS = REPO / "results" / "screenshots"  # git-ignored; what a user would see, for a reviewer


def run_tprepro(*args, cwd, **env) -> "subprocess.CompletedProcess":
    """`python -m tprepro <args>` in `cwd` with the pipeline environment (`env` added), output captured."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "tprepro", *map(str, args)], cwd=cwd, env=tool_env(**env),
                          capture_output=True, text=True, timeout=600)


def chromium(url: str, profile: Path, screenshot: str | Path | None = None, budget_ms: int = 30000,
             offline: bool = False) -> str:
    """The DOM of `url` after headless Chromium ran its scripts for `budget_ms` (virtual time);
    with `screenshot`, also saved as results/screenshots/<screenshot>.png (1400x900), or at `screenshot`
    itself when it is a Path; `offline`: no host name resolves (a page that needs the network shows it)."""
    import shutil
    import subprocess

    binary = shutil.which("chromium")
    assert binary, "chromium missing: run `make system-deps` (apt-get install chromium)"
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
               f"--virtual-time-budget={budget_ms}", "--window-size=1400,900"]
    if offline:
        command.append("--host-resolver-rules=MAP * ~NOTFOUND")
    dom = subprocess.run([*command, "--dump-dom", url], capture_output=True, text=True, timeout=180).stdout
    if screenshot:
        path = screenshot if isinstance(screenshot, Path) else SCREENSHOTS / f"{screenshot}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([*command, f"--screenshot={path}", url], capture_output=True, timeout=180, check=True)
    return dom


def browser(window: str = "1400,900"):
    """Headless Chromium driven by Selenium through Debian's chromedriver (`make system-deps` installs
    chromium-driver): a context manager giving the WebDriver, quit at the end."""
    import contextlib
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver, "chromium or chromedriver missing: run `make system-deps`"
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--no-first-run", f"--window-size={window}"):
        options.add_argument(argument)

    @contextlib.contextmanager
    def session():
        chrome = webdriver.Chrome(service=Service(driver), options=options)  # no driver download: Debian's
        try:
            yield chrome
        finally:
            chrome.quit()

    return session()


def padded_batch(vocab: int, pad: int, seed: int = 0):
    """Sources of lengths 7, 4, 5 (right-padded with `pad`) and targets [B=3, T=6] without padding."""
    import torch

    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, vocab, (3, 7), generator=g)
    src[1, 4:] = pad
    src[2, 5:] = pad
    return src, torch.randint(3, vocab, (3, 6), generator=g)
