"""benchmarks/kit: what the benchmarks share (intervals, stamped reports, tables, settings overrides, the recording
callback), benchmarks importing it as a package, never through the import path, and training as the stages do."""

import json
import re
import sys
import time
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from helpers import REPO
from tprepro.params import TrainConfig, load_params

from benchmarks import parity
from benchmarks.kit.overrides import cpu_run, given, params_train
from benchmarks.kit.report import kind_of_name, markdown_table, stamp, write_report
from benchmarks.kit.runner import Recorder
from benchmarks.kit.stats import interval, paired_interval


def test_no_benchmark_changes_the_import_path():
    inserts = [f"{path.relative_to(REPO)}:{number}" for path in sorted((REPO / "benchmarks").rglob("*.py"))
               for number, line in enumerate(path.read_text().splitlines(), start=1)
               if re.search(r"sys\.path\.(insert|append)|sys\.path\s*[+]?=", line)]
    assert not inserts, inserts


def test_no_benchmark_sets_up_a_trainer_of_its_own():
    """A benchmark trains as the stages do: a TrainingRun (an experiment's training_run, or kit.runner.preset_run)
    through tprepro.training.trainer; none builds a TrainJob or a Trainer itself."""
    import ast

    own = [f"{path.relative_to(REPO)}:{node.lineno}" for path in sorted((REPO / "benchmarks").rglob("*.py"))
           for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
           if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
           in ("Trainer", "TrainJob")]
    assert not own, own


def test_the_interval_is_the_t_interval_and_paired_takes_the_common_seeds():
    values = interval([1.0, 2.0, 3.0])
    assert values["mean"] == 2.0 and values["sd"] == 1.0 and values["n"] == 3
    assert values["high"] - 2.0 == pytest.approx(4.302653 / 3 ** 0.5, rel=1e-6)  # t(0.975, 2) sd / sqrt(n)
    paired = paired_interval({1: 0.5, 2: 0.6, 3: 0.4}, {1: 0.6, 2: 0.8, 4: 9.0})
    assert paired["n"] == 2 and paired["mean"] == pytest.approx(0.15)
    with pytest.raises(ValueError, match="no seed in both"):
        paired_interval({1: 0.5}, {2: 0.5})
    assert interval([1.0])["sd"] != interval([1.0])["sd"]  # one value: no spread (NaN)


def test_a_report_is_stamped_and_written_whole(tmp_path):
    stamped = stamp()
    assert re.fullmatch(r"[0-9a-f]{7,}|unknown", stamped["commit"])
    assert stamped["device"] == "cpu" and stamped["cpu"] and stamped["torch"] == torch.__version__
    assert stamped["date"] == time.strftime("%Y-%m-%d", time.gmtime())
    out = write_report(tmp_path / "deep" / "report.json", {**stamped, "results": [1.5]})
    assert json.loads(out.read_text()) == {**stamped, "results": [1.5]}
    assert markdown_table(["a", "b"], [[1, "x"]]) == "| a | b |\n|---|---|\n| 1 | x |"


@pytest.mark.parametrize("name, kind", [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"),
                                        ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA L40S", "l40s"),
                                        ("NVIDIA GeForce RTX 4090", "nvidia-geforce-rtx-4090")])
def test_device_kinds_are_short_names(name, kind):
    assert kind_of_name(name) == kind


def test_overrides_keep_the_params_settings_a_run_does_not_change():
    base = params_train(REPO / "params.yaml")
    assert base == TrainConfig.from_params(load_params(REPO / "params.yaml"))
    run = cpu_run(base, 7, 2, **given(lr=0.1, batch_size=None))
    assert (run.steps, run.checkpoint_every, run.threads, run.device, run.amp, run.compile, run.processes) == \
           (7, 7, 2, "cpu", False, False, 1)
    assert run.lr == 0.1 and run.batch_size == base.batch_size


def test_the_recorder_probes_every_n_steps_and_at_the_end_with_its_clocks_stopped():
    model = nn.Linear(1, 1)
    modes = []

    def probe(m):
        modes.append(m.training)
        time.sleep(0.1)
        return {"score": len(modes)}

    recorder = Recorder(probe, every=4)
    recorder.on_train_start(SimpleNamespace(model=model, config=SimpleNamespace(steps=10)))
    for step in (2, 4, 6, 8, 10):
        recorder.on_log(step, {"loss": 1.0 / step})
    assert [p["step"] for p in recorder.logged] == [2, 4, 6, 8, 10]
    assert [(p["step"], p["score"]) for p in recorder.probed] == [(4, 1), (8, 2), (10, 3)]
    assert modes == [False] * 3 and model.training  # scored in eval mode, trained on in train mode
    assert recorder.logged[-1]["seconds"] < 0.1 and recorder.logged[-1]["loss"] == 0.1  # the probes' time left out


def test_the_authors_utils_serve_their_model_file_only_while_it_loads(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "lib.py").write_text("HyperParams = 'theirs'\n")
    (tmp_path / "models" / "transformer.py").write_text("from utils.lib import HyperParams\n")
    mine = SimpleNamespace(__name__="utils")
    sys.modules["utils"] = mine
    try:
        module = parity.load_authors_module(tmp_path, "transformer")
        assert module.HyperParams == "theirs"
        assert sys.modules["utils"] is mine and "utils.lib" not in sys.modules
    finally:
        sys.modules.pop("utils", None)
    assert str(tmp_path) not in sys.path
