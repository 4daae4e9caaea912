"""README's Layout follows the tree: every entry of the repository's top level is named there, every path
it names exists, and so does every module and package its src/tprepro/ line lists."""

import re
import subprocess

from helpers import REPO


def layout() -> dict[str, str]:
    """The Layout block: each path its first column names (`tests/, benchmarks/` names two) -> its description."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Layout\n\n```\n", 1)[1].split("```", 1)[0]
    entries, last = {}, None
    for line in block.splitlines():
        if line.startswith(" "):  # a description's continuation
            entries[last] += " " + line.strip()
            continue
        names, description = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        for name in names.split(", "):
            entries[name] = description
        last = name
    return entries


def tracked_top_level() -> set[str]:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {path.split("/")[0] for path in files.splitlines() if not path.startswith(".")}


def test_every_top_level_entry_is_in_the_layout():
    named = {name.rstrip("/").split("/")[0] for name in layout()}
    assert not tracked_top_level() - named, "top-level entries the Layout does not name"


def test_every_path_in_the_layout_exists():
    assert not [name for name in layout() if not (REPO / name).exists()], "Layout paths that do not exist"


def test_the_package_line_names_real_modules():
    listed = re.findall(r"([a-z_]+(?:\.py|/))", layout()["src/tprepro/"].split("(", 1)[0])
    assert listed and not [name for name in listed if not (REPO / "src/tprepro" / name).exists()]
