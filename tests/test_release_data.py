"""Tests that need the real release files find them through $TPREPRO_RELEASE_DATA: absent, they skip with
one line naming the file and where it is published; under CI=true they fail, so CI never loses them."""

import subprocess
import sys

from helpers import REPO, tool_env

PROBE = '''
from helpers import release_file

def test_needs_the_mathqa_dev_split():
    assert release_file("mathqa/dev.json").is_file()
'''


def run_probe(tmp_path, **env):
    (tmp_path / "test_probe.py").write_text(PROBE)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           str(tmp_path / "test_probe.py")], cwd=tmp_path, capture_output=True, text=True,
                          env=tool_env(PYTHONPATH=str(REPO / "tests"), TPREPRO_RELEASE_DATA=str(tmp_path / "none"),
                                       **env))


def test_absent_release_files_skip_with_the_file_and_its_source(tmp_path):
    result = run_probe(tmp_path, CI="")
    assert result.returncode == 0, result.stdout
    assert "SKIPPED [1] " in result.stdout and f"{tmp_path / 'none' / 'mathqa' / 'dev.json'} is absent: " \
        "the MathQA release (Amini et al. 2019), https://math-qa.github.io/" in result.stdout
    assert "1 skipped" in result.stdout


def test_under_ci_absent_release_files_fail(tmp_path):
    result = run_probe(tmp_path, CI="true")
    assert result.returncode == 1 and "1 failed" in result.stdout
