"""What a command runs and reads (tprepro.audit): a real `tprepro split-index` under TPREPRO_AUDIT_LOG appends one
line naming the code it ran and the params keys it read, and none of the code that only validated its settings."""

import json
import subprocess

from helpers import tool_env

from experiments.mathematics.test_split_index import workspace  # noqa: F401  (real shards and params)


def test_a_stage_appends_the_code_it_ran_and_the_keys_it_read(workspace, tmp_path):  # noqa: F811
    log = tmp_path / "audit.jsonl"
    done = subprocess.run(["tprepro", "split-index", "--split", "extrapolate", "--data", "data",
                           "--out", "data/extrapolate.json"], cwd=workspace, env=tool_env(TPREPRO_AUDIT_LOG=str(log)),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["command"] == "split-index" and entry["argv"][:3] == ["split-index", "--split", "extrapolate"]
    assert entry["params"] == ["grid.extrapolation_modules"]  # what it read of the settings, nothing more
    assert {"experiments/mathematics/data_stage.py", "experiments/mathematics/modules.py",
            "data/shards.py"} <= set(entry["code"])
    assert "experiments/two_variable/settings.py" not in entry["code"]  # run only to validate the settings
    assert "audit.py" not in entry["code"]


def test_without_the_variable_nothing_is_recorded(workspace):  # noqa: F811
    done = subprocess.run(["tprepro", "split-index", "--split", "extrapolate", "--data", "data",
                           "--out", "data/extrapolate.json"], cwd=workspace, env=tool_env(), capture_output=True,
                          text=True)
    assert done.returncode == 0 and not list(workspace.rglob("*.jsonl"))
