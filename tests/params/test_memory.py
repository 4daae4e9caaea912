"""A model and batch that cannot fit the device are refused when params are validated, naming the key
(params/memory.py); every shipped config passes: params.yaml and cpu.yaml on this machine, paper.yaml
on one GPU of 80 GB."""

import pytest
import yaml

import torch

from helpers import REPO, load_default_params, run_tprepro, write_params
from tprepro.cli import main
from tprepro.errors import TpreproError
from tprepro.params import resolved_models, validate_params
from tprepro.params.memory import check_fits, section_tokens, section_train, training_bytes


def test_a_model_no_device_holds_is_refused_by_tprepro_validate(tmp_path, capsys):
    params = load_default_params()
    params["models"]["transformer"]["d_model"] = 65536
    path = write_params(tmp_path / "params.yaml", params)
    assert main(["validate", "--params", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: models.transformer.d_model: training models.transformer needs at least about" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("section", ["train", "two_variable.train"])
def test_a_batch_beyond_the_ram_of_a_cpu_run_is_refused_naming_the_batch_size(section):
    params = load_default_params()
    params["train"]["device"] = "cpu"
    settings = params["two_variable"]["train"] if section == "two_variable.train" else params["train"]
    settings["batch_size"] = 10**7
    with pytest.raises(TpreproError, match=rf"params.yaml: {section}\.batch_size: training .* needs at least about "
                                           r"[\d,]+ GiB .* more than the \d+ GiB of RAM; lower"):
        validate_params(params, "params.yaml")


def test_the_estimate_grows_with_the_model_and_the_batch():
    (_, _, cfg), *_ = resolved_models(load_default_params())
    small = training_bytes(cfg, 8, (48, 16))
    assert training_bytes(cfg, 16, (48, 16)).activations == 2 * small.activations  # linear in the batch
    assert training_bytes(cfg, 16, (48, 16)).state == small.state
    assert training_bytes(cfg, 8, (96, 16)).activations > small.activations


@pytest.mark.parametrize("config", ["params.yaml", "workflow/configs/cpu.yaml"])
def test_the_cpu_configs_fit_this_machine(config):
    params = yaml.safe_load((REPO / config).read_text())
    validate_params(params, config)  # on this machine's device (CI: no GPU)
    for section, name, cfg in resolved_models(params, config):
        train, key = section_train(params, section)
        check_fits(cfg, f"{section}.{name}", {**train, "device": "cpu"}, key, section_tokens(params, section), config)


def test_paper_config_fits_one_80_gb_gpu():
    params = yaml.safe_load((REPO / "workflow/configs/paper.yaml").read_text())
    validate_params(params, "paper.yaml")
    gpu = (80 * 10**9, "80 GB of an H100")
    for section, name, cfg in resolved_models(params, "paper.yaml"):
        train, key = section_train(params, section)
        check_fits(cfg, f"{section}.{name}", {**train, "processes": 1}, key, section_tokens(params, section),
                   "paper.yaml", memory=gpu)


no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without a GPU")


@no_gpu
def test_device_auto_without_a_gpu_is_checked_against_this_machines_ram(tmp_path):
    """Issue 46, gap 2: `device: auto` on a machine without a GPU trains on its CPU, so the estimate is
    compared with the RAM (a batch of 100,000 validated on a 23 GiB machine, then a raw allocator
    traceback); the real `tprepro validate`."""
    params = load_default_params()
    assert params["train"]["device"] == "auto"
    params["train"]["batch_size"] = 100_000
    path = write_params(tmp_path / "params.yaml", params)
    done = run_tprepro("validate", "--params", path, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{path}: train.batch_size: training models.transformer needs at least about" in done.stderr
    assert "GiB of RAM (device 'auto' trains on this machine's CPU" in done.stderr
    assert "Traceback" not in done.stderr


@no_gpu
def test_max_positions_is_counted_in_the_estimate(tmp_path):
    """Issue 46, gap 2: every size key counts (`max_positions: 1e8` made a 12.8 GB sinusoid table and a
    raw traceback): the model is counted as built, buffers included."""
    params = load_default_params()
    params["models"]["transformer"]["max_positions"] = 10**8
    path = write_params(tmp_path / "params.yaml", params)
    done = run_tprepro("validate", "--params", path, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{path}: models.transformer.max_positions: training models.transformer needs at least" in done.stderr
    assert "Traceback" not in done.stderr


def test_family_sizes_count_in_the_estimate():
    """A family's size keys (an LSTM's hidden units, a universal transformer's steps) change the estimate."""
    from tprepro.models.registry import resolve_model_config

    lstm = training_bytes(resolve_model_config("lstm2lstm_tiny", {}), 8, (48, 16))
    wider = training_bytes(resolve_model_config("lstm2lstm_tiny", {"lstm_hidden": 4096}), 8, (48, 16))
    assert wider.state > lstm.state and wider.activations > lstm.activations
    ut = training_bytes(resolve_model_config("ut_tiny", {}), 8, (48, 16))
    longer = training_bytes(resolve_model_config("ut_tiny", {"ut_steps": 8}), 8, (48, 16))
    assert longer.activations > ut.activations


def test_a_config_whose_jobs_run_on_gpu_nodes_is_checked_against_one_gpu_outside_its_jobs(monkeypatch):
    """paper.yaml (device auto, `cluster.train` on h100 nodes) validates on a login node without a GPU;
    inside a SLURM job on a node without one, auto means that node's RAM."""
    from tprepro.params.memory import LARGEST_DEVICE, device_memory

    cluster = {"train": {"gpus": 1, "device": "h100"}}
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    if not torch.cuda.is_available():
        assert device_memory("auto", cluster)[0] >= LARGEST_DEVICE
        assert "of RAM" in device_memory("auto", {"train": {"gpus": 1}})[1]
        monkeypatch.setenv("SLURM_JOB_ID", "7")
        assert "of RAM" in device_memory("auto", cluster)[1]


def test_what_an_arch_refuses_to_build_is_refused_when_params_are_validated():
    """The estimate builds each model (on the meta device), so a setting its builder refuses (an init the
    N2F LSTMs do not support) stops validation naming the key, not the training job later."""
    params = load_default_params()
    params["n2f"]["algolisp"]["models"]["lstm2lstm"]["init"] = "paper_literal"
    with pytest.raises(TpreproError, match=r"params.yaml: n2f.algolisp.models.lstm2lstm: model.init: arch lstm2lstm "
                                           r"supports 'pytorch' and 'authors'"):
        validate_params(params, "params.yaml")
