"""A model and batch that cannot fit the device are refused when params are validated, naming the key
(params/memory.py); every shipped config passes: params.yaml and cpu.yaml on this machine, paper.yaml
on one GPU of 80 GB."""

import pytest
import yaml

from helpers import REPO, load_default_params, write_params
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
