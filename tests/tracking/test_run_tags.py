"""What a run says about itself in MLflow's own fields: its source commit and a description."""

import subprocess

from helpers import REPO
from tprepro.models.registry import resolve_model_config
from tprepro.params import TrainConfig
from tprepro.training import run_description
from tprepro.tracking.provenance import source_tags


def test_source_tags_name_the_commit_inside_a_checkout_and_nothing_outside(tmp_path, monkeypatch):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(REPO)
    tags = source_tags()
    assert tags["mlflow.source.git.commit"] == head and tags["git_commit"].startswith(head)
    monkeypatch.chdir(tmp_path)  # not a git checkout
    tags = source_tags()
    assert tags["git_commit"] == "unknown" and "mlflow.source.git.commit" not in tags


def test_the_description_says_what_was_trained_on_what():
    model = resolve_model_config("tp_transformer_tiny", {})
    config = TrainConfig(steps=2500, batch_size=64, lr=5e-4, betas=(0.9, 0.995), grad_clip=0.1, warmup_steps=0,
                         checkpoint_every=500, log_every=50, bucket_width=8, shuffle_buffer=8, read_rows=8,
                         device="cpu", threads=1)
    datasets = {f"train-easy/m{i}": None for i in range(8)}
    text = run_description("tp_transformer", 3, model, config, datasets)
    assert text.startswith("**tp_transformer** (arch `tp_transformer`, binding `continuous_role`; d_model 64, "
                           "2+2 layers, 4 heads), seed 3: 2500 steps of batch 64, lr 0.0005, on train-easy/m0")
    assert text.endswith("train-easy/m5 and 2 more.")


def test_a_training_log_says_when_where_and_which_run(tmp_path):
    """The job log (stdout and stderr of `tprepro train`) opens with a timestamped line naming the
    device and the start step, names its MLflow run, and closes with the final step and loss."""
    import re

    from training_project import make_workspace, train

    workspace = make_workspace(tmp_path / "w", steps=6, checkpoint_every=3, log_every=3)
    log = train(workspace, tmp_path / "run")
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    assert re.search(rf"{stamp} \[transformer-s1\] training on cpu \(1 threads, bf16 autocast off\), "
                     r"from step 0 of 6, batch 8", log), log
    assert re.search(r"\[transformer-s1\] MLflow run [0-9a-f]{32} in experiment 'tprepro-mathematics' \(\S+/mlflow.db\)",
                     log), log
    assert re.search(rf"{stamp} \[transformer-s1\] finished: step 6, final loss \d+\.\d{{4}}", log), log


def test_runs_record_only_the_settings_their_architecture_reads():
    from tprepro.models.registry import arch_settings

    transformer = arch_settings(resolve_model_config("transformer_tiny", {}))
    assert {"d_model", "n_heads", "n_encoder_layers", "binding", "d_ff"} <= transformer.keys()
    assert not {"lstm_hidden", "ut_steps", "n_fillers", "act_epsilon", "n_roles"} & transformer.keys()
    assert {"n_roles", "d_role"} <= arch_settings(resolve_model_config("tpt_d_tiny", {})).keys()  # its binding's
    assert arch_settings(resolve_model_config("ut_tiny", {})).keys() & {"ut_steps", "n_encoder_layers"} == {"ut_steps"}
    lstm = arch_settings(resolve_model_config("lstm_tiny", {}))
    assert set(lstm) == {"arch", "d_model", "dropout", "init", "lstm_hidden", "lstm_layers"}
    n2f = arch_settings(resolve_model_config("tp_n2f_tiny", {}))
    assert {"n_fillers", "tuple_arity", "d_relation"} <= n2f.keys() and "n_heads" not in n2f


def test_progress_in_a_log_file_is_timestamped_lines_without_redraws(capsys):
    import re
    from types import SimpleNamespace

    from tprepro.train.callbacks import ProgressBar

    progress = ProgressBar(log_interval=0.0)  # a line at every logged step
    trainer = SimpleNamespace(name="tp-s1", step=0, device="cpu", amp=False,
                              config=SimpleNamespace(steps=10, batch_size=4))
    progress.on_train_start(trainer)
    progress.on_log(5, {"loss": 1.5})
    progress.on_train_end({"steps": 10, "final_loss": 1.25})
    err = capsys.readouterr().err  # not a terminal: no tqdm bar
    assert "\r" not in err and "|" not in err
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    assert re.search(rf"{stamp} \[tp-s1\] step 5/10, loss 1.5000, [\d.]+ steps/s, about [\d.]+ min left", err), err
    assert re.search(rf"{stamp} \[tp-s1\] finished: step 10, final loss 1.2500", err), err


def test_a_training_runs_logged_model_is_named_by_its_run(tmp_path):
    """MLflow's Models tab tells the runs' models apart: `<MLflow experiment>-<run name>`."""
    from mlflow.tracking import MlflowClient

    from training_project import make_workspace, train

    workspace = make_workspace(tmp_path / "w", steps=3, checkpoint_every=3, log_every=3)
    train(workspace, tmp_path / "run")
    client = MlflowClient(f"sqlite:///{tmp_path / 'run' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("tprepro-mathematics")
    (run,) = client.search_runs([experiment.experiment_id], filter_string="tags.stage = 'train'")
    logged = [m for m in client.search_logged_models([experiment.experiment_id]) if m.source_run_id == run.info.run_id]
    assert run.info.run_name == "transformer-s1"
    assert [(m.name, m.model_type) for m in logged] == [("tprepro-mathematics-transformer-s1", "pyfunc")]
