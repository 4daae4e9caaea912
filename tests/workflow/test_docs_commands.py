"""The shell commands the documentation shows still work: each names real sub-commands, options,
Makefile targets and repository paths.

Every ```bash / ```sh / ```shell / ```console block of README.md, the experiments' READMEs,
workflow/*/README.md and docs/*.md is read; each command line (comments dropped, `\\` continuations
joined, `&&` / `;` / `|` chains split, `$ ` prompts in console blocks) is checked without running it:
- `tprepro ...` (also `python -m tprepro`, `torchrun ... -m tprepro`) through the CLI's own argparse parser;
- `make X` against the Makefile's targets;
- `snakemake ...` through Snakemake's argument parser, its targets against rule names or outputs;
- `dvc ...` through DVC's argument parser;
- every token that names a repository path (its first component an entry of the repository or of
  the pipeline's outputs) exists, or is an output of a DVC stage (dvc.yaml: the same outputs as the
  Snakefile, tests/workflow/test_dag_equality.py) or of a Makefile rule, or is written by the command itself.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from helpers import REPO

SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(\s*)```\s*([A-Za-z0-9_+-]*)\s*$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Options whose value is a file the command writes (so it need not exist beforehand).
WRITES = {"--report", "--out", "-o", "--table", "--metrics", "--csv", "--md",
          "--figure", "--curves", "--modules-csv"}


def documents() -> list[Path]:
    found = [REPO / "README.md", *sorted((REPO / "src/tprepro/experiments").glob("*/README.md")),
             *sorted((REPO / "workflow").glob("*/README.md")), *sorted((REPO / "docs").glob("*.md"))]
    return [path for path in found if path.is_file()]


@dataclass(frozen=True)
class Command:
    file: str
    line: int
    text: str
    words: tuple[str, ...]

    def where(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def strip_comment(line: str) -> str:
    """`line` without a shell comment: a `#` at the start of a word, outside quotes."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def split_chain(words: list[str]) -> list[list[str]]:
    """Split a tokenised line at the shell's command separators."""
    parts, current = [], []
    for word in words:
        if word in {"&&", "||", ";", "|", "&"}:
            parts.append(current)
            current = []
        else:
            current.append(word)
    parts.append(current)
    return [part for part in parts if part]


def commands_in(path: Path, rel: str = "") -> list[Command]:
    rel = rel or str(path.relative_to(REPO))
    found = []
    language = None  # inside a fence: its language ("" for none); None outside
    pending, start = "", 0
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fence = FENCE.match(raw)
        if fence:
            language = None if language is not None else fence.group(2).lower()
            pending = ""
            continue
        if language not in SHELL_LANGUAGES:
            continue
        line = raw.strip()
        if language == "console" and not pending:
            if not line.startswith("$ "):
                continue  # output
            line = line[2:]
        line = strip_comment(line)
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text, pending = pending + line, ""
        if not text.strip():
            continue
        try:
            lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError as exc:
            pytest.fail(f"{rel}:{start}: {text}: not a shell command line ({exc})")
        for part in split_chain(words):
            while part and ASSIGNMENT.match(part[0]):  # VAR=value command
                part = part[1:]
            if part:
                found.append(Command(rel, start, text, tuple(part)))
    return found


ALL_COMMANDS = [command for path in documents() for command in commands_in(path)]


def program(command: Command) -> str:
    first = command.words[0]
    return first.removeprefix(".venv/bin/").removeprefix("./.venv/bin/")


def commands_of(name: str) -> list[Command]:
    return [c for c in ALL_COMMANDS if program(c) == name]


def ids(commands: list[Command]) -> list[str]:
    return [f"{c.file}:{c.line}" for c in commands]


# ---------------------------------------------------------------- the repository's own names


@functools.cache
def makefile_targets() -> set[str]:
    text = (REPO / "Makefile").read_text()
    targets = set()
    for line in text.splitlines():
        match = re.match(r"^([^\s:=#][^:=]*?)\s*::?(?!=)", line)
        if match and not line.startswith("\t"):
            targets.update(match.group(1).split())
    for line in re.findall(r"^\.PHONY:(.*)$", text, re.M):
        targets.update(line.split())
    return targets


@functools.cache
def produced_patterns() -> list[list[re.Pattern]]:
    """The outputs of every DVC stage and Makefile file target, each as per-component patterns."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    outputs = []
    for stage in stages.values():
        body = stage.get("do", stage)
        for key in ("outs", "metrics", "plots"):
            for entry in body.get(key, []):
                outputs.extend(entry if isinstance(entry, dict) else [entry])
    variables = {"VENV": ".venv", "GEN": ".venv-gen"}
    for target in makefile_targets():
        for name, value in variables.items():
            target = target.replace(f"$({name})", value)
        if "/" in target or "." in target:
            outputs.append(target)
    patterns = []
    for output in outputs:
        parts = []
        for component in output.strip("/").split("/"):
            pieces = re.split(r"\$\{[^}]*\}", component)
            parts.append(re.compile("[^/]+".join(re.escape(piece) for piece in pieces)))
        patterns.append(parts)
    return patterns


def produced(path: str) -> bool:
    """`path` is an output, a folder holding one, or inside an output folder."""
    components = path.strip("/").split("/")
    for pattern in produced_patterns():
        n = min(len(components), len(pattern))
        if all(pattern[i].fullmatch(components[i]) for i in range(n)):
            return True
    return False


@functools.cache
def path_roots() -> set[str]:
    """First components that make a token a repository path: the repository's entries and outputs'."""
    roots = {entry.name for entry in REPO.iterdir() if entry.name not in {".git"}}
    roots.update(pattern[0].pattern.replace("\\", "") for pattern in produced_patterns())
    return {root for root in roots if root}


def path_candidates(word: str) -> list[str]:
    """The repository paths a word names (`--opt=path`, `key=path` included)."""
    candidates = [word, *(word.split("=", 1)[1:] if "=" in word else [])]
    found = []
    for candidate in candidates:
        candidate = candidate.strip("'\"")
        if not candidate or any(c in candidate for c in "<>{}*$?[]") or "://" in candidate:
            continue  # a placeholder, glob or URL
        candidate = candidate.removeprefix("./")
        if candidate.split("/")[0] in path_roots():
            found.append(candidate.rstrip("/"))
    return found


def missing_paths(command: Command) -> list[str]:
    missing = []
    previous = ""
    for word in command.words[1:]:
        for path in path_candidates(word):
            if (REPO / path).exists() or produced(path):
                continue
            if previous in WRITES and ((REPO / path).parent.is_dir() or produced(str(Path(path).parent))):
                continue  # the command writes it
            missing.append(path)
        previous = word
    return missing


# ---------------------------------------------------------------- the checks


def test_the_documents_show_commands():
    assert len(documents()) >= 5
    assert commands_of("make") and commands_of("snakemake") and commands_of("tprepro") and commands_of("dvc")
    readme = [c for c in ALL_COMMANDS if c.file == "README.md"]
    assert any(c.words == ("make", "test") for c in readme), "README.md must keep `make test` as the test command"
    assert any(c.words == ("make", "run") for c in readme)


def test_comment_and_continuation_handling(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("```bash\nmake run   # then: make test\nsnakemake --cores 2 \\\n  --config params=a.yaml"
                   " 'x={a: 1}'  # note\n```\n```console\n$ dvc repro && dvc plots show\noutput line\n```\n")
    found = commands_in(doc, "x.md")
    assert [c.words for c in found] == [("make", "run"),
                                        ("snakemake", "--cores", "2", "--config", "params=a.yaml", "x={a: 1}"),
                                        ("dvc", "repro"), ("dvc", "plots", "show")]
    assert [c.line for c in found] == [2, 3, 7, 7]


@pytest.mark.parametrize("command", commands_of("make"), ids=ids(commands_of("make")))
def test_make_targets_exist(command):
    goals = [w for w in command.words[1:] if not w.startswith("-") and "=" not in w]
    unknown = [goal for goal in goals if goal not in makefile_targets()]
    assert not unknown, f"{command.where()}: no Makefile target {unknown}"


def tprepro_arguments(command: Command) -> list[str] | None:
    words = list(command.words)
    if program(command) == "tprepro":
        return words[1:]
    for i in range(len(words) - 1):
        if words[i] == "-m" and words[i + 1] == "tprepro":
            return words[i + 2:]
    return None


TPREPRO = [c for c in ALL_COMMANDS if tprepro_arguments(c) is not None]


@functools.cache
def tprepro_parser():
    from tprepro.cli import build_parser

    return build_parser()


def parses(parser, arguments: list[str]) -> str | None:
    """None if `parser` accepts `arguments` (`--help` included), else argparse's message."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(arguments)
    except SystemExit as exc:
        if exc.code not in (0, None):
            return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {exc.code}"
    return None


@pytest.mark.parametrize("command", TPREPRO, ids=ids(TPREPRO))
def test_tprepro_commands_parse(command):
    error = parses(tprepro_parser(), tprepro_arguments(command))
    assert error is None, f"{command.where()}: {error}"


@functools.cache
def snakemake_parser():
    from snakemake.cli import get_argument_parser

    return get_argument_parser()


@functools.cache
def rule_names() -> set[str]:
    files = [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]
    return {name for f in files for name in re.findall(r"^rule\s+(\w+)\s*:", f.read_text(), re.M)}


@pytest.mark.parametrize("command", commands_of("snakemake"), ids=ids(commands_of("snakemake")))
def test_snakemake_commands_parse(command):
    parser = snakemake_parser()
    arguments = list(command.words[1:])
    error = parses(parser, arguments)
    assert error is None, f"{command.where()}: {error}"
    for target in parser.parse_args(arguments).targets or []:
        assert target in rule_names() or produced(target), f"{command.where()}: no rule or output {target!r}"


@functools.cache
def dvc_stage_names() -> set[str]:
    return set(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"])


@pytest.mark.parametrize("command", commands_of("dvc"), ids=ids(commands_of("dvc")))
def test_dvc_commands_parse(command):
    from dvc.cli import parse_args

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args = parse_args(list(command.words[1:]))
    except (SystemExit, Exception) as exc:  # DVC's parser raises DvcParserError where argparse exits
        pytest.fail(f"{command.where()}: {err.getvalue().strip() or exc!r}")
    if args.cmd == "repro":
        unknown = [t for t in args.targets if t.split("@")[0] not in dvc_stage_names() and not (REPO / t).exists()]
        assert not unknown, f"{command.where()}: no DVC stage {unknown}"


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=ids(ALL_COMMANDS))
def test_named_paths_exist_or_are_made(command):
    missing = missing_paths(command)
    assert not missing, f"{command.where()}: no such file in the repository, nor made by `make run`: {missing}"
