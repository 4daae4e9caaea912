"""Training jobs' progress as their progress logs tell it (the lines of train.callbacks.ProgressBar):
what `tprepro status` prints for the trainings under logs/progress/."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tprepro.train.files import PROGRESS

LINE = re.compile(r"^(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC \[(?P<name>[^\]]+)\] (?P<text>.*)$")
STARTED = re.compile(r"^training on .*?(?:from step 0|resuming at step (?P<step>\d+)) of (?P<total>\d+)")
STEP = re.compile(r"^step (?P<step>\d+)/(?P<total>\d+), loss \S+, (?P<rate>[\d.]+) steps/s"
                  r"(?:, about (?P<left>[\d.]+) min left)?")
FINISHED = re.compile(r"^finished: step (?P<step>\d+)")


@dataclass(frozen=True)
class Progress:
    """The last thing a training job's log says about it."""

    log: Path
    name: str  # the job, e.g. "transformer-s1"
    finished: bool
    step: int
    total: int | None
    rate: float | None  # steps/s of this attempt, when a step line said it
    minutes_left: float | None
    updated: datetime  # the time stamp of that line (UTC)

    def describe(self, now: datetime, label: str | None = None) -> str:
        """One line: job (or `label`), step of total, rate, time left, how old the news is, and the log."""
        done = f" ({self.step / self.total:.0%})" if self.total else ""
        parts = [f"{label or self.name}: {'finished at ' if self.finished else ''}step {self.step}"
                 f"{'/' + str(self.total) if self.total else ''}{done}"]
        if not self.finished:
            parts.append(f"{self.rate:.2f} steps/s" if self.rate is not None else "no rate yet")
            if self.minutes_left is not None:
                parts.append(f"about {self.minutes_left:.1f} min left")
        age = max(0, int((now - self.updated).total_seconds()))
        parts.append(f"as of {age // 60} min {age % 60} s ago")
        return ", ".join(parts) + f"  [{self.log}]"


TAIL_BYTES = 1 << 20  # how much of a log's end `tprepro status` reads: a progress line every half minute


def log_tail(log: Path, size: int = TAIL_BYTES) -> str:
    """The last `size` bytes of `log` as text, from its first whole line (a log may be gigabytes long)."""
    with open(log, "rb") as handle:
        end = handle.seek(0, 2)
        start = max(0, end - size)
        handle.seek(start)
        data = handle.read(end - start)
    if start > 0:  # drop the line cut in two
        data = data[data.find(b"\n") + 1:] if b"\n" in data else b""
    return data.decode("utf-8", errors="replace")


def read_progress(log: Path) -> Progress | None:
    """The job's progress from the last training line in its log's last `TAIL_BYTES`; None if they hold
    none (not a training job's, not started yet, or silent for a megabyte of other output)."""
    found = None
    try:
        text = log_tail(log)
    except OSError:
        return None
    for line in text.splitlines():
        match = LINE.match(line.strip())
        if match is None:
            continue
        updated = datetime.strptime(match["stamp"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
        name, said = match["name"], match["text"]
        if started := STARTED.match(said):
            found = Progress(log, name, False, int(started["step"] or 0), int(started["total"]), None, None, updated)
        elif step := STEP.match(said):
            left = float(step["left"]) if step["left"] else None
            found = Progress(log, name, False, int(step["step"]), int(step["total"]), float(step["rate"]), left,
                             updated)
        elif (finished := FINISHED.match(said)) and found is not None:
            found = Progress(log, name, True, int(finished["step"]), found.total, None, None, updated)
    return found


def job_progress(logs: Path) -> list[Progress]:
    """Every training job's progress under `logs` (each *.log file, at any depth), by log path."""
    found = (read_progress(path) for path in sorted(logs.rglob("*.log")))
    return [progress for progress in found if progress is not None]


def labels(jobs: list[Progress], logs: Path) -> list[str]:
    """Each job's name, or, where several jobs share it (one model in two experiments, or trained by
    Snakemake and by DVC), its log's path under `logs` without `.log`: lines that name runs apart."""
    shared = {name for name in (job.name for job in jobs) if sum(job.name == name for job in jobs) > 1}
    return [job.log.relative_to(logs).with_suffix("").as_posix()
            if job.name in shared and job.log.is_relative_to(logs) else job.name for job in jobs]


def status_report(logs: Path, everything: bool = False, now: datetime | None = None) -> str:
    """What `tprepro status` prints: each unfinished training job (with `everything`, the finished
    ones too), and how to follow one. It reads `logs`/progress/, the progress log every training
    writes however its stderr is routed (train/files.py progress_log)."""
    now = now or datetime.now(timezone.utc)
    folder = logs / PROGRESS
    jobs = job_progress(folder)
    running = [job for job in jobs if not job.finished]
    shown = jobs if everything else running
    lines = [job.describe(now, label) for job, label in zip(shown, labels(shown, logs))]
    finished = len(jobs) - len(running)
    if not running:
        lines.append(f"no training job in progress under {folder}/ ({finished} finished)")
    else:
        lines += ["", f"{len(running)} in progress, {finished} finished. Follow one with `tail -f {running[0].log}` "
                      f"(a progress line every half minute); a job whose last line is much older than that "
                      f"has stopped: the end of its job's output says why (under Snakemake, its log in logs/)."]
    return "\n".join(lines)
