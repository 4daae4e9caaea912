"""`tprepro predict` takes any bytes a shell can pass (issue 46, gap 7): bytes that are not UTF-8 on the command
line are answered as U+FFFD, a NUL byte is refused naming the line, and an overlong line is refused by number
before it is held in memory, by the real CLI in a fresh process."""

import json
import subprocess
import sys

import pytest

from helpers import tool_env
from training_project import trained_run


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return trained_run(tmp_path_factory.mktemp("predict_input"), steps=4, log_every=2) / "model"


def tprepro(*args, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tprepro", *args], input=stdin, env=tool_env(),
                          capture_output=True, timeout=600)


def test_a_question_that_is_not_utf8_on_the_command_line_is_answered_with_the_replacement_character(model_dir):
    """A 34-line UnicodeEncodeError before the fix (the argument's lone surrogates could not be printed)."""
    result = tprepro("predict", "--model-dir", str(model_dir), b"What is 2 \xff+ 3?")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    assert result.stdout.decode("utf-8").startswith("What is 2 \ufffd+ 3? | ")
    assert "Traceback" not in stderr
    result = tprepro("predict", "--model-dir", str(model_dir), "--json", b"What is \xc3( 1?")
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout)["question"] == "What is \ufffd( 1?"


def test_a_nul_byte_in_a_question_is_refused_naming_the_line(model_dir, tmp_path):
    """NUL bytes passed silently before the fix (a command-line argument cannot hold one; a file or stdin can)."""
    result = tprepro("predict", "--model-dir", str(model_dir), "--file", "-", stdin=b"What is 1 + 1?\nWhat\x00 is 2?\n")
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert "stdin: line 2 holds a NUL byte at character 5" in stderr and "Traceback" not in stderr
    assert not result.stdout  # nothing answered


def test_an_overlong_line_is_refused_by_number_before_it_takes_memory(model_dir):
    """A 50 MB line took 3.2 GB before it was refused (unnumbered); now it is refused as soon as more than
    MAX_QUESTION_BYTES of it are read, naming stdin and the line; the process's peak memory stays within
    a few tens of MB of answering the short line alone (measured in the same way, beside it)."""
    script = ("import resource, runpy, sys\n"
              "sys.argv = ['tprepro', 'predict', '--model-dir', sys.argv[1], '--file', '-']\n"
              "try:\n    runpy.run_module('tprepro', run_name='__main__')\n"
              "except SystemExit as exc:\n    code = exc.code\n"
              "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
              "sys.exit(code)\n")

    def peak_kib(stdin: bytes) -> tuple[int, int, str]:
        result = subprocess.run([sys.executable, "-c", script, str(model_dir)], input=stdin, env=tool_env(),
                                capture_output=True, timeout=600)
        stderr = result.stderr.decode()
        return result.returncode, int(stderr.rsplit("peak ", 1)[1].split()[0]), stderr

    short = b"What is 1 + 1?\n"
    code, overlong, stderr = peak_kib(short + b"What is " + b"1 + " * 12_500_000 + b"1?\n")  # a 50 MB line
    assert code == 2, stderr[-3000:]
    assert "stdin: line 2 is longer than 1,048,576 bytes" in stderr and "Traceback" not in stderr
    code, answering, stderr = peak_kib(short)
    assert code == 0, stderr[-3000:]
    assert overlong - answering < 200_000, f"{overlong} KiB at peak against {answering} answering one short line"
