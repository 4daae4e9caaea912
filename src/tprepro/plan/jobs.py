"""The jobs of a params file, from the stage declarations both tools build their DAG from (each Stage's
DvcStage: command, matrix, deps, outputs), with the upstream jobs each one waits for and the SLURM
family the stage declares."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tprepro.errors import TpreproError


@dataclass(frozen=True)
class Job:
    """One job: a stage run with one matrix item."""

    stage: str  # the `tprepro` sub-command
    rule: str  # its Snakemake rule
    item: tuple[tuple[str, str], ...]  # the matrix values (model, seed; split, module; ...)
    outputs: tuple[str, ...]  # what it writes (outs, results, metrics, plots)
    deps: tuple[str, ...]  # the data it reads
    family: str | None  # params `cluster:` family its stage declares; None: a local rule (runs where Snakemake runs)
    rule_values: tuple[str, ...] = ()  # its Snakemake wildcards' values (a foreach stage's job: its rule's)
    command: str = ""  # the `tprepro` command it runs

    @property
    def values(self) -> dict[str, str]:
        return dict(self.item)

    @property
    def name(self) -> str:
        return " ".join((self.rule, *(value for _, value in self.item)))


def jobs(params: dict) -> list["Job"]:
    """Every job of `params`, in the registry's order (stage by stage, the matrix expanded as DVC does)."""
    from tprepro.experiments import experiments
    from tprepro.params.references import axis_values, pattern

    found = []
    for stage in (stage for experiment in experiments().values() for stage in experiment.stages):
        for dvc in stage.dvc:
            if dvc.matrix:
                axes = {key: axis_values(params, declared) for key, declared in dvc.matrix.items()}
            elif dvc.foreach:
                axes = {"key" if dvc.foreach_key else "item": axis_values(params, dvc.foreach)}
            else:
                axes = {}
            written = dvc.written
            rule_output = pattern(stage.dvc[0].written[0], params, item="item", key="key")
            for combination in itertools.product(*axes.values()):
                values = dict(zip(axes, map(str, combination)))
                fill = lambda path: pattern(path, params, item="item", key="key").format(**values)  # noqa: E731
                outputs = tuple(map(fill, written))
                found.append(Job(stage.name, stage.rule, tuple(values.items()), outputs,
                                 tuple(map(fill, dvc.deps)), stage.family,
                                 _wildcard_values(outputs[0], rule_output), fill(dvc.cmd)))
    return found


def _wildcard_values(path: str, output: str) -> tuple[str, ...]:
    """The values of `output`'s {wildcards} with which it is `path` (its rule's wildcards for the job)."""
    from tprepro.params.references import matched

    values = matched(path, output)
    if values is None:
        raise TpreproError(f"{path}: not an output of its rule ({output})")
    return tuple(values.values())


def upstream(all_jobs: list[Job]) -> dict[Job, list[Job]]:
    """job -> the jobs writing what it reads: a path they write, or anything under a folder it reads."""
    writers: dict[str, Job] = {output: job for job in all_jobs for output in job.outputs}
    found = {}
    for job in all_jobs:
        before = []
        for dep in job.deps:
            if dep in writers:
                before.append(writers[dep])
            else:
                before += [writer for output, writer in writers.items() if output.startswith(f"{dep}/")]
        found[job] = list(dict.fromkeys(before))
    return found
