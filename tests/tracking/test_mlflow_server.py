"""MLflow server mode against a real `mlflow server` on 127.0.0.1: parent and child runs of a
Snakemake invocation checked through the REST API and in the UI (headless Chromium), and the
fallback to the local store when the server dies mid-training."""

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import mlflow
import mlflow.artifacts
import pytest

from helpers import chromium, copy_project, experiment_name, tool_env, write_params
from pipeline_kit import micro_params
from tprepro.experiments import experiments as registry
from training_project import make_workspace, start_training, summary, train

pytestmark = pytest.mark.slow


class Server:
    """`mlflow server` with a sqlite backend and an explicit artifact root, in its own process group."""

    def __init__(self, root):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.uri = f"http://127.0.0.1:{self.port}"
        self.log = open(root / "server.log", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{root / 'server.db'}",
             "--default-artifact-root", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, env=tool_env())
        deadline = time.monotonic() + 300  # ~30 s on an idle machine
        while not self._healthy():
            assert self.process.poll() is None, (root / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "mlflow server did not start"
            time.sleep(0.5)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()

    def api(self, endpoint: str, body: dict | None = None, **query) -> dict:
        url = f"{self.uri}/api/2.0/mlflow/{endpoint}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, generate_python):
    """The micro pipeline run by Snakemake with MLFLOW_TRACKING_URI pointing at a live server."""
    tmp = tmp_path_factory.mktemp("mlflow_server")
    server = Server(tmp)
    try:
        root = copy_project(tmp / "repo")
        params = micro_params()
        write_params(root / "params.yaml", params)
        result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=root,
                                capture_output=True, text=True,
                                env=tool_env(TPREPRO_GENERATE_PYTHON=generate_python,
                                             MLFLOW_TRACKING_URI=server.uri))
        assert result.returncode == 0, result.stderr[-4000:]
        yield server, root, params
    finally:
        server.stop()


def runs_by_name(server: Server, experiment: str) -> dict[str, dict]:
    experiment_id = server.api("experiments/get-by-name", experiment_name=experiment)["experiment"]["experiment_id"]
    runs = server.api("runs/search", {"experiment_ids": [experiment_id], "max_results": 100})["runs"]
    assert len({r["info"]["run_name"] for r in runs}) == len(runs)  # one parent for the invocation
    return {r["info"]["run_name"]: r for r in runs}


def tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def test_every_job_logs_to_the_server_as_a_child_of_one_parent_run(pipeline):
    server, root, params = pipeline
    runs = runs_by_name(server, experiment_name(params))
    assert {"pipeline", "transformer-s1", "tp_transformer-s1", "tables"} <= set(runs)
    parent = runs.pop("pipeline")  # the only parent: every other run of the invocation is its child
    assert parent["info"]["status"] == "FINISHED"
    for name, run in runs.items():
        assert tags(run)["mlflow.parentRunId"] == parent["info"]["run_id"], name
        assert run["info"]["status"] == "FINISHED", name
    assert not (root / "mlflow.db").exists()  # nothing went to the local store

    trained = runs["tp_transformer-s1"]
    assert {p["key"]: p["value"] for p in trained["data"]["params"]}["model.binding"] == "continuous_role"
    metrics = {m["key"] for m in trained["data"]["metrics"]}
    assert {"acc.interpolate.mean", "acc.extrapolate.mean", "tokens_per_s"} <= metrics
    history = server.api("metrics/get-history", run_id=trained["info"]["run_id"], metric_key="loss")["metrics"]
    assert [m["step"] for m in history] == [3, 6, 9, 12]

    tables = server.api("artifacts/list", run_id=runs["tables"]["info"]["run_id"], path="results")["files"]
    assert {"results/table1.md", "results/table1.csv", "results/metrics.json"} <= {f["path"] for f in tables}


def experiment_id(server: Server, name: str) -> str:
    return server.api("experiments/get-by-name", experiment_name=name)["experiment"]["experiment_id"]


TRAINING_VIEW = "workflowType=machine_learning"  # in the URLs the jobs print (MLflow 3.17 lands on GenAI otherwise)


def test_the_ui_runs_page_shows_the_pipeline_runs(pipeline, tmp_path):
    server, _, params = pipeline
    names = ("pipeline", "transformer-s1", "tp_transformer-s1", "tables")
    # Sorted by name, the table lists child runs flat instead of folded under their parent.
    url = (f"{server.uri}/#/experiments/{experiment_id(server, experiment_name(params))}/runs"
           f"?orderByKey=attributes.run_name&orderByAsc=true&{TRAINING_VIEW}")
    dom = chromium(url, tmp_path, screenshot="mlflow_runs")
    for name in names:
        assert f">{name}<" in dom, name


def test_the_ui_lists_one_described_experiment_per_paper(pipeline, tmp_path):
    server, _, params = pipeline
    expected = [experiment_name(params, name) for name in ("mathematics", "two_variable", "n2f")]
    experiments = {e["name"]: e for e in server.api("experiments/search", {"max_results": 100})["experiments"]}
    for paper, name in zip(("mathematics", "two_variable", "n2f"), expected):
        experiment_tags = {t["key"]: t["value"] for t in experiments[name].get("tags", [])}
        assert experiment_tags["mlflow.experimentKind"] == "custom_model_development", name
        description = experiment_tags["mlflow.note.content"]  # the UI shows it as written: plain text
        assert description.startswith(registry()[paper].title) and "**" not in description, name
    dom = chromium(f"{server.uri}/#/experiments?{TRAINING_VIEW}", tmp_path, screenshot="mlflow_experiments")
    for name in expected:
        assert f">{name}<" in dom, name
    # an experiment's page, as the jobs' log lines link it, opens on its runs (the training view)
    landing = chromium(f"{server.uri}/#/experiments/{experiment_id(server, expected[0])}?{TRAINING_VIEW}", tmp_path)
    assert "<title>Runs - Experiment" in landing and "Schlag et al." in landing and "**" not in landing


def test_a_training_run_page_shows_its_model_datasets_and_log(pipeline, tmp_path):
    server, _, params = pipeline
    run = runs_by_name(server, experiment_name(params))["tp_transformer-s1"]
    run_id = run["info"]["run_id"]
    experiment_id = run["info"]["experiment_id"]
    models = [m["info"] for m in server.api("logged-models/search", {"experiment_ids": [experiment_id]})["models"]
              if m["info"].get("source_run_id") == run_id]  # MLflow's Logged models (evaluate/pyfunc.py)
    name = f"{experiment_name(params)}-tp_transformer-s1"  # the Models tab tells the runs' models apart
    assert [(m["name"], m["model_type"], m["status"]) for m in models] == [(name, "pyfunc", "LOGGED_MODEL_READY")]
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(server.uri)  # runs:/ resolves a logged model through the global tracking URI
    try:
        files = mlflow.artifacts.list_artifacts(artifact_uri=f"runs:/{run_id}/{name}")
        weights = mlflow.artifacts.list_artifacts(artifact_uri=f"runs:/{run_id}/{name}/artifacts/tprepro_model")
    finally:
        mlflow.set_tracking_uri(previous)
    assert {f"{name}/MLmodel", f"{name}/artifacts"} <= {f.path for f in files}
    assert {f.path.rsplit("/", 1)[-1] for f in weights} >= {"model.pt", "train_metrics.json"}
    assert [f["path"] for f in server.api("artifacts/list", run_id=run_id, path="logs")["files"]] == [
        "logs/tp_transformer-s1.log"]
    inputs = server.api("runs/get", run_id=run_id)["run"]["inputs"]["dataset_inputs"]
    assert {i["dataset"]["name"].split("/")[0] for i in inputs} == {"train-easy", "train-medium", "train-hard"}
    dom = chromium(f"{server.uri}/#/experiments/{experiment_id}/runs/{run_id}?{TRAINING_VIEW}", tmp_path,
                   screenshot="mlflow_run_model")
    text = " ".join(re.sub(r"<[^>]+>", " ", dom).split())
    assert "Logged models (1)" in text and f" {name} Ready " in text, text[:3000]  # its name and status


def test_readmes_comparison_path_reaches_two_runs_compare_view_and_curves(tmp_path):
    """README's MLflow comparison, clicked as it says, against a live server holding two experiments' runs of one
    model (a baseline and the same model trained on under more steps, as `dvc exp run -S train.steps=...` does):
    `tprepro ui-links` (what `make ui` prints) opens the training runs flat, each name in full; tick the two,
    press Compare: their settings side by side (train.steps differs); a metric's name opens both curves overlaid.
    Screenshots of each view are written under the test's tmp folder."""
    import yaml
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from helpers import browser

    server = Server(tmp_path)
    try:
        workspace = make_workspace(tmp_path / "ws", steps=6, log_every=3, checkpoint_every=3)
        train(workspace, tmp_path / "run", MLFLOW_TRACKING_URI=server.uri, DVC_EXP_NAME="baseline")
        params = yaml.safe_load((workspace / "params.yaml").read_text())
        params["train"]["steps"] = 12
        write_params(workspace / "params.yaml", params)
        train(workspace, tmp_path / "run", MLFLOW_TRACKING_URI=server.uri, DVC_EXP_NAME="longer")
        found = server.api("runs/search", {"experiment_ids": [experiment_id(server, experiment_name(params))],
                                           "filter": "tags.stage = 'train'"})["runs"]
        names = sorted(run["info"]["run_name"] for run in found)
        assert len(names) == 2 and names[0] == "transformer-s1", names  # each under its invocation's parent run
        longer = names[1]
        assert re.fullmatch(r"transformer-s1-[0-9a-f]{7}", longer), names

        links = subprocess.run([sys.executable, "-m", "tprepro", "ui-links", "--params", str(workspace / "params.yaml")],
                               env=tool_env(MLFLOW_TRACKING_URI=server.uri), capture_output=True, text=True, check=True)
        link = dict(line.split(": ", 1) for line in links.stdout.splitlines())[experiment_name(params)]
        with browser() as chrome:
            wait = WebDriverWait(chrome, 120)
            chrome.get(link)
            runs = [wait.until(lambda page, name=name: page.find_element(By.XPATH, f"//a[normalize-space()='{name}']"))
                    for name in ("transformer-s1", longer)]
            assert not chrome.find_elements(By.XPATH, "//a[normalize-space()='pipeline']")  # flat: no parent to expand
            for run in runs:  # each name shown whole: its link and its cell overflow nothing
                widths = chrome.execute_script("const cell = arguments[0].closest('[role=gridcell]');"
                                               "return [arguments[0].scrollWidth, arguments[0].clientWidth,"
                                               " cell.scrollWidth, cell.clientWidth]", run)
                assert widths[0] <= widths[1] and widths[2] <= widths[3], (run.text, widths)
                row = run.find_element(By.XPATH, "./ancestor::*[@role='row'][1]").get_attribute("row-index")
                chrome.find_element(By.CSS_SELECTOR, f".ag-pinned-left-cols-container [row-index='{row}'] "
                                                     "input[type=checkbox]").click()  # tick it
            chrome.save_screenshot(str(tmp_path / "mlflow_runs_ticked.png"))
            chrome.find_element(By.XPATH, "//button[normalize-space()='Compare']").click()
            wait.until(lambda page: "Comparing 2 Runs" in page.page_source)
            steps = wait.until(lambda page: page.find_element(By.XPATH, "//*[normalize-space()='train.steps']"
                                                                        "/ancestor::tr[1]"))
            assert steps.text.split()[-2:] == ["6", "12"], steps.text  # the setting that differs, side by side
            assert {"transformer-s1", longer} <= set(chrome.find_element(By.TAG_NAME, "body").text.split())
            chrome.save_screenshot(str(tmp_path / "mlflow_compare.png"))
            chrome.find_element(By.XPATH, "//a[normalize-space()='heldout_exact_match']").click()
            legend = wait.until(lambda page: [text for text in page.find_element(By.TAG_NAME, "body").text.splitlines()
                                              if "(heldout_exact_match)" in text] or None)
            assert {"transformer-s1 (heldout_exact_match)", f"{longer} (heldout_exact_match)"} <= {
                part.strip() for line in legend for part in re.split(r"\s{2,}|(?<=\))\s", line)}, legend
            assert chrome.find_elements(By.CSS_SELECTOR, "svg .scatterlayer .trace")  # the curves drawn
            chrome.save_screenshot(str(tmp_path / "mlflow_curves.png"))
    finally:
        server.stop()
    assert all((tmp_path / f"{name}.png").stat().st_size > 0 for name in ("mlflow_runs_ticked", "mlflow_compare",
                                                                          "mlflow_curves"))


def test_training_falls_back_to_the_local_store_when_the_server_dies(tmp_path):
    server = Server(tmp_path)
    try:
        workspace = make_workspace(tmp_path / "ws", steps=400, log_every=9, checkpoint_every=10)
        run = workspace / "run"
        process = start_training(workspace, run, MLFLOW_TRACKING_URI=server.uri)
        checkpoint = run / "checkpoints" / "checkpoint.pt"
        while not checkpoint.exists():  # the server run exists and has metrics by now
            assert process.poll() is None, process.communicate()[0][-4000:]
            time.sleep(0.02)
        server.stop(signal.SIGKILL)
        out, _ = process.communicate(timeout=600)
    finally:
        server.stop()
    assert process.returncode == 0, out[-4000:]
    assert out.count("WARNING: MLflow tracking server") == 1
    assert summary(run)["mlflow_tracking_uri"].startswith("sqlite:")
    with sqlite3.connect(run / "mlflow.db") as db:
        (run_id,) = db.execute("SELECT run_uuid FROM runs WHERE name = 'transformer-s1'").fetchone()
        steps = [s for (s,) in db.execute(
            "SELECT step FROM metrics WHERE run_uuid = ? AND key = 'loss' ORDER BY step", (run_id,))]
        run_tags = dict(db.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (run_id,)).fetchall())
        run_params = dict(db.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run_id,)).fetchall())
    assert steps == [*range(9, 400, 9), 400]  # also what the server got before it died
    assert run_tags["tprepro.fallback_from"].startswith(server.uri)
    assert run_params["model.d_model"] == "16"
    assert summary(run)["mlflow_run_id"] == run_id
