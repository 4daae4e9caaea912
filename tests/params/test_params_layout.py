"""params.yaml is written in the layout `dvc exp run -S key=value` writes (DVC's own writer,
`dvc.utils.hydra.apply_overrides`, a ruamel round trip): setting any one key changes that key's line
and nothing else, comments included, so a DVC experiment's diff of params.yaml is the setting it made."""

import difflib
import re
import shutil

import pytest
import yaml

from helpers import REPO


def set_with_dvc(tmp_path, override: str) -> list[str]:
    """The diff lines (+/-) DVC's params writer makes in a copy of params.yaml for `-S override`."""
    from dvc.utils.hydra import apply_overrides

    path = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", path)
    apply_overrides(path, [override])
    before, after = (REPO / "params.yaml").read_text().splitlines(), path.read_text().splitlines()
    return [line for line in difflib.unified_diff(before, after, lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def leaves(node, prefix=""):
    """(dotted key, value) of every setting that is not a mapping (an empty mapping has none)."""
    for key, value in node.items():
        if isinstance(value, dict):
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def other_value(value) -> str:
    """A value other than `value` in DVC's override syntax."""
    if isinstance(value, bool):
        return str(not value).lower()
    if isinstance(value, (int, float)):
        return repr(value + 1)
    return "changed" if value is None else f"{value}_changed"


SETTINGS = list(leaves(yaml.safe_load((REPO / "params.yaml").read_text())))


def test_dvc_rewrites_params_yaml_unchanged(tmp_path):
    """A key set to the value it has: DVC's writer gives back the same bytes (the committed file is its layout)."""
    from dvc.utils.hydra import apply_overrides

    path = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", path)
    apply_overrides(path, ["train.steps=" + str(yaml.safe_load(path.read_text())["train"]["steps"])])
    assert path.read_bytes() == (REPO / "params.yaml").read_bytes()


def test_the_readmes_experiment_changes_train_steps_line_only(tmp_path):
    assert [line.split("#")[0].strip() for line in set_with_dvc(tmp_path, "train.steps=2000")] == [
        "-  steps: 1000", "+  steps: 2000"]


@pytest.mark.slow  # DVC's writer once per setting: about 0.1 s each, 170 of them
@pytest.mark.parametrize("key,value", [(key, value) for key, value in SETTINGS if not isinstance(value, list)],
                         ids=[key for key, value in SETTINGS if not isinstance(value, list)])
def test_setting_one_key_changes_its_line_only(tmp_path, key, value):
    changed = set_with_dvc(tmp_path, f"{key}={other_value(value)}")
    leaf = key.rsplit(".", 1)[-1]  # its line (a flow mapping's: the mapping's line)
    assert len(changed) == 2 and changed[0][0] == "-" and changed[1][0] == "+", changed
    assert re.search(rf"\b{re.escape(leaf)}:", changed[0]) and re.search(rf"\b{re.escape(leaf)}:", changed[1]), changed
    comment = changed[0].partition(" #")[2]  # its comment stays, where it was
    assert changed[1].endswith(comment), changed


@pytest.mark.slow
@pytest.mark.parametrize("key,value", [(key, value) for key, value in SETTINGS if isinstance(value, list)],
                         ids=[key for key, value in SETTINGS if isinstance(value, list)])
def test_a_list_grown_by_one_adds_its_line_only(tmp_path, key, value):
    grown = [*value, value[-1] + 1 if isinstance(value[-1], (int, float)) else f"{value[-1]}_changed"]
    changed = set_with_dvc(tmp_path, f"{key}=[{','.join(map(str, grown))}]")
    assert changed == [f"+{' ' * (2 * key.count('.'))}- {grown[-1]}"], changed
