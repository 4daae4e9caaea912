"""The install belongs to its folder: a copied checkout's venvs are rebuilt, and tprepro says when the
package it runs is not the checkout's own src/ (issue 25: a copy ran the original's code)."""

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, copy_project, tool_env


def venvs_made_for(root: Path, stamp: str) -> None:
    """A checkout at `root` whose two venvs' stamps name `stamp` (another folder: a copied checkout)."""
    root.mkdir()
    shutil.copy(REPO / "Makefile", root / "Makefile")
    (root / "pyproject.toml").touch()
    (root / "requirements").mkdir()
    (root / "requirements" / "generate.txt").touch()
    for venv in VENVS:
        (root / venv).mkdir()
        (root / venv / "marker").write_text("made elsewhere")
        (root / venv / ".installed").write_text(f"{stamp}\n")  # newer than pyproject.toml: up to date, but elsewhere
    (root / ".dvc").mkdir()
    (root / ".dvc" / "offline_plots.html").touch()  # newer than .venv/.installed


VENVS = (".venv", ".venv-gen")


@pytest.mark.parametrize("command", [["make", "-n", "install"], ["make", "help"], ["make", "-n", "run"]])
def test_make_deletes_no_venv_for_a_dry_run_or_help(tmp_path, command):
    root = tmp_path / "copy"
    venvs_made_for(root, "/somewhere/else")
    listing = subprocess.run(command, cwd=root, capture_output=True, text=True).stdout
    assert all((root / venv / "marker").exists() for venv in VENVS)
    if "-n" in command:  # the dry run shows the deletion it would do, with its message
        for venv in VENVS:
            assert f"{venv} was made for /somewhere/else: deleting it to make it anew here" in listing


@pytest.mark.parametrize("stamp, kept", [("/somewhere/else", False), (None, True)])
def test_make_install_rebuilds_a_venv_made_for_another_folder_and_says_so(tmp_path, stamp, kept):
    """The real install, stopped right after the deletion by a PYTHON that fails (no 2 GB download)."""
    root = tmp_path / "copy"
    venvs_made_for(root, stamp or str(root))
    made = subprocess.run(["make", "-k", "install", "PYTHON=false"], cwd=root, capture_output=True, text=True)
    for venv in VENVS:
        assert (root / venv / "marker").exists() == kept, venv
        said = f"{venv} was made for {stamp}: deleting it to make it anew here" in made.stdout
        assert said == (not kept), made.stdout + made.stderr
    assert made.returncode == (0 if kept else 2)  # up to date here; made anew (and failed) elsewhere


def test_tprepro_warns_when_it_runs_another_checkouts_code(tmp_path):
    copy = copy_project(tmp_path / "copy")
    result = subprocess.run([sys.executable, "-m", "tprepro", "models"], cwd=copy, env=tool_env(),
                            capture_output=True, text=True)
    assert result.returncode == 0
    assert (f"WARNING: tprepro runs from {REPO / 'src' / 'tprepro'}, not from this checkout's "
            f"{copy / 'src' / 'tprepro'}") in result.stderr
    here = subprocess.run([sys.executable, "-m", "tprepro", "models"], cwd=REPO, env=tool_env(),
                          capture_output=True, text=True)
    assert "WARNING" not in here.stderr


def test_make_help_lists_every_target_with_its_comment():
    listing = subprocess.run(["make", "-s", "help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    targets = [line.split()[0] for line in listing.splitlines()]
    makefile = (REPO / "Makefile").read_text()
    phony = next(line for line in makefile.splitlines() if line.startswith(".PHONY:")).split()[1:]
    assert targets == re.findall(r"^## ([\w-]+):", makefile, flags=re.M)
    assert sorted(targets) == sorted(phony)  # every target a user can call has its comment
    assert all(len(line.split(None, 1)) == 2 for line in listing.splitlines())


def test_make_ui_serves_the_project_store_and_prints_the_training_view(tmp_path):
    """`make ui`: the MLflow UI on ./mlflow.db, at the address it prints (MLflow 3's training view)."""
    import socket
    import time
    import urllib.request

    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")  # ui-links names the experiments from it
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ui = subprocess.Popen(["make", "-s", "ui", f"UI_PORT={port}", f"BIN={Path(sys.executable).parent}"], cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline, page = time.monotonic() + 180, None
        while page is None and time.monotonic() < deadline and ui.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    page = response.read().decode()
            except OSError:
                time.sleep(0.5)
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        output = ui.communicate(timeout=60)[0]
    assert page and "MLflow" in page, output[-3000:]
    assert output.splitlines()[0] == (f"MLflow UI: http://127.0.0.1:{port}/#/experiments?workflowType=machine_learning"
                                      f"  (Ctrl-C stops it)")
    assert output.splitlines()[1] == f"no MLflow store yet ({tmp_path / 'mlflow.db'}): run the pipeline first"
    assert (tmp_path / "mlflow.db").is_file()  # the project's own store
