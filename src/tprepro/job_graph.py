"""The job graph: every dvc.yaml stage the registry declares (each Stage's DvcStage), expanded once under a
params file. Snakemake's rules (workflow.py: inputs, rule all's targets) read its stage nodes; `tprepro plan`
and the SLURM runtimes read its jobs. DVC expands the same matrices itself from the generated dvc.yaml."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from tprepro.errors import TpreproError
from tprepro.params.references import FOREACH, axes_of, job_values, matched, pattern


@dataclass(frozen=True)
class StageNode:
    """One dvc.yaml stage under a params file, its paths as Snakemake patterns: `{name}` is one of its
    matrix's wildcards (a foreach stage's: {item}, or {key} over a mapping)."""

    stage: str  # the Stage's name (its `tprepro` sub-command)
    rule: str  # the Stage's Snakemake rule
    dvc_stage: str  # its stage in dvc.yaml (the DvcStage's name, else the rule's)
    family: str | None  # the params `cluster:` family the Stage declares; None: a local rule
    outputs: tuple[str, ...]  # what it writes (outs, results, metrics, plots)
    summary: str  # the output standing for a job in `rule all`: its metrics file, else its first output
    deps: tuple[str, ...]  # what it reads
    command: str  # the `tprepro` command line
    axes: tuple[tuple[str, object], ...]  # (wildcard, a params reference or the values) of its jobs
    rule_names: tuple[tuple[str, str], ...] = ()  # its rule's names for {item} and {key} (DvcStage.rule_names)

    def writes_under(self, folder: str) -> bool:
        return any(output.startswith(f"{folder}/") for output in self.outputs)

    def values(self, params: dict, keep: Collection[str] = ()) -> list[dict[str, str]]:
        """Each job's wildcard values, its axes' values combined; a wildcard in `keep` stays `{name}`."""
        return job_values(params, self.axes, keep)


def stage_nodes(params: dict) -> list[StageNode]:
    """Every dvc.yaml stage as a StageNode, in the registry's order."""
    from tprepro.experiments import experiments

    nodes = []
    for stage in (stage for experiment in experiments().values() for stage in experiment.stages):
        for dvc in stage.dvc:
            outputs = tuple(pattern(path, params, **FOREACH) for path in dvc.written)
            summary = pattern(dvc.metrics[0], params, **FOREACH) if dvc.metrics else outputs[0]
            axes = axes_of(dvc.matrix, dvc.foreach, dvc.foreach_key)
            nodes.append(StageNode(stage.name, stage.rule, dvc.name or stage.rule, stage.family, outputs, summary,
                                   tuple(pattern(path, params, **FOREACH) for path in dvc.deps),
                                   pattern(dvc.cmd, params, **FOREACH), axes,
                                   tuple(stage.dvc[0].rule_names.items())))
    return nodes


def writer_of(path: str, nodes: list[StageNode]) -> tuple[str, tuple] | None:
    """(stage, wildcard values) of the job writing `path`, or None if no stage writes it; the first
    stage that does wins (the summarization corpus before data/summarization/{dataset})."""
    for node in nodes:
        for output in node.outputs:
            values = matched(path, output)
            if values is not None:
                return node.stage, tuple(sorted(values.items()))
    return None


def upstream_stages(node: StageNode, nodes: list[StageNode]) -> set[str]:
    """The stages whose outputs `node` reads: a dep's writer, or every stage writing under a folder dep."""
    found = set()
    for dep in node.deps:
        writer = writer_of(dep, nodes)
        found |= {writer[0]} if writer else {other.stage for other in nodes if other.writes_under(dep)}
    return found


@dataclass(frozen=True)
class Job:
    """One job: a stage run with one matrix item."""

    stage: str  # the `tprepro` sub-command
    rule: str  # its Snakemake rule
    item: tuple[tuple[str, str], ...]  # the matrix values (model, seed; split, module; ...)
    outputs: tuple[str, ...]  # what it writes (outs, results, metrics, plots)
    deps: tuple[str, ...]  # the data it reads
    family: str | None  # params `cluster:` family its stage declares; None: a local rule (runs where Snakemake runs)
    rule_wildcards: tuple[tuple[str, str], ...] = ()  # its Snakemake wildcards by name (a foreach stage's job: its rule's)
    command: str = ""  # the `tprepro` command it runs
    dvc_stage: str = ""  # its stage in dvc.yaml

    @property
    def values(self) -> dict[str, str]:
        return dict(self.item)

    @property
    def name(self) -> str:
        return " ".join((self.rule, *(value for _, value in self.item)))

    @property
    def dvc_name(self) -> str:
        """Its name in `dvc status` and `dvc repro`: the dvc.yaml stage, `@` and its matrix values joined by `-`."""
        return "@".join((self.dvc_stage, "-".join(value for _, value in self.item))) if self.item else self.dvc_stage


def jobs(params: dict) -> list[Job]:
    """Every job of `params`, in the registry's order (stage by stage, the matrix expanded as DVC does)."""
    found, rule_outputs = [], {}
    for node in stage_nodes(params):
        rule_output = rule_outputs.setdefault(node.stage, node.outputs[0])  # the rule's: its first DvcStage's
        for values in node.values(params):
            outputs = tuple(path.format(**values) for path in node.outputs)
            found.append(Job(node.stage, node.rule, tuple(values.items()), outputs,
                             tuple(path.format(**values) for path in node.deps), node.family,
                             _rule_wildcards(outputs[0], rule_output, dict(node.rule_names)),
                             node.command.format(**values),
                             node.dvc_stage))
    return found


def _rule_wildcards(path: str, output: str, rule_names: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """(name, value) of each of `output`'s {wildcards} with which it is `path`: its rule's wildcards for the job,
    a foreach stage's {item} or {key} under the rule's name for it (`rule_names`)."""
    values = matched(path, output)
    if values is None:
        raise TpreproError(f"{path}: not an output of its rule ({output})")
    return tuple((rule_names.get(name, name), value) for name, value in values.items())


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
