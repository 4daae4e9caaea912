"""The N2F interpretation stage (`interpret-n2f`): the TP-N2F decoder's relation unbinding vectors, clustered."""

from __future__ import annotations

import json
from pathlib import Path

from tprepro.data.shards import open_dataset
from tprepro.errors import TpreproError
from tprepro.experiments import mlflow_experiment
from tprepro.interpret.outputs import TINY_NOTE, load_for_analysis, log_outputs, write_table
from tprepro.interpret.sampling import pairs, sample_rows
from tprepro.io import atomic_directory, atomic_write_text
from tprepro.params import load_params
from tprepro.params.reads import peek


def n2f_stage(params_path: str, task: str, model_dir: Path, test_dir: Path, out: Path) -> None:
    """n2f/interpret/<task>/: the TP-N2F decoder's relation unbinding vectors, clustered."""
    from tprepro.experiments.n2f.tasks import get_task
    from tprepro.interpret import unbinding_clusters as unbinding

    params = load_params(params_path)
    setting, seed = params["n2f"]["interpret"]["unbinding"], params["interpret"]["seed"]
    if task not in peek(params, "n2f", "tasks"):
        raise TpreproError(f"{params_path}: n2f.tasks: {task!r} is not listed")
    model, vocab, summary = load_for_analysis(model_dir)
    if not unbinding.has_unbinding(model):
        raise TpreproError(f"{params_path}: n2f.interpret.unbinding.model: {setting['model']!r} has no TP-N2F "
                           "decoder (no relation unbinding vectors): choose tp_n2f or lstm2tp")
    dataset = open_dataset(test_dir, schema=get_task(task).schema)
    rows = pairs(sample_rows(dataset, setting["n"], f"{seed}:unbinding"))
    names, means, counts = unbinding.relation_means(model, vocab, rows, params["n2f"]["evaluate"]["batch_size"])
    if not names:
        raise TpreproError(f"{test_dir}: the sampled programs use no operator")
    labels, coords = unbinding.cluster_operators(means, setting["clusters"][task], seed)
    with atomic_directory(out) as tmp:
        write_table(unbinding.members_table(names, labels, counts), tmp / "unbinding_clusters.csv")
        unbinding.cluster_figure(names, labels, coords, tmp / "unbinding_clusters.png",
                                 f"{task} {summary['model']}: relation unbinding vectors, "
                                 f"k={setting['clusters'][task]} ({TINY_NOTE})")
        atomic_write_text(tmp / "unbinding_vectors.json", json.dumps(
            {"operators": names, "counts": counts, "cluster": labels.tolist(), "pca": coords.tolist()}) + "\n")
    print(f"{task}/{summary['model']}: {len(names)} operators in {len(set(labels.tolist()))} clusters -> {out}")
    log_outputs(mlflow_experiment(params, "n2f"), summary, out, {})
