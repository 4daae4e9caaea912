"""The Mathematics interpretation stages: per run, attention maps, role clusters, head reconstruction
and role one-hotness (`interpret-mathematics`); over the grid, the head-reconstruction table
(`interpret-reconstruction`)."""

from __future__ import annotations

import json
from pathlib import Path

from tprepro.data.shards import open_dataset
from tprepro.errors import TpreproError
from tprepro.experiments import mlflow_experiment
from tprepro.interpret.hooks import layer_number
from tprepro.interpret.outputs import (TINY_NOTE, load_for_analysis, log_outputs, markdown_table, write_attention,
                                       write_table)
from tprepro.interpret.sampling import pairs, sample_rows
from tprepro.io import atomic_directory, atomic_write_text
from tprepro.params import load_params
from tprepro.params.reads import peek
from tprepro.pipeline import read_train_metrics, tracked_run

RECONSTRUCTION_FILE = "head_reconstruction.json"


def mathematics_stage(params_path: str, model_dir: Path, interpolate_dir: Path, out: Path) -> None:
    """mathematics/interpret/<run>/: attention maps; role clusters (models with role vectors);
    per-head reconstruction errors (layered Transformers); role one-hotness (TPT-d)."""
    from tprepro.interpret import head_reconstruction as recon
    from tprepro.interpret import one_hotness as onehot
    from tprepro.interpret import role_clusters as roles

    params = load_params(params_path)
    settings = params["interpret"]
    module, seed = settings["module"], settings["seed"]
    modules = peek(params, "grid", "modules")  # a guard: the module sampled must be one the grid generates
    if module not in modules:
        raise TpreproError(f"{params_path}: interpret.module: {module!r} is not in grid.modules ({', '.join(modules)})")
    dataset = open_dataset(interpolate_dir / module)
    model, vocab, summary = load_for_analysis(model_dir)
    name = f"{summary['model']}-s{summary['seed']}"
    metrics: dict[str, float] = {}
    done = []
    with atomic_directory(out) as tmp:
        examples = pairs(sample_rows(dataset, settings["examples"], f"{seed}:examples"))
        write_attention(model, vocab, examples, settings["attention"]["head"], tmp, f"{name} on {module} ({TINY_NOTE})",
                   done)

        cluster = settings["role_clusters"]
        if roles.has_role_vectors(model, cluster["layer"]):
            rows = pairs(sample_rows(dataset, cluster["n"], f"{seed}:role_clusters"))
            if not 0 <= cluster["head"] < model.cfg.n_heads:
                raise TpreproError(f"{params_path}: interpret.role_clusters.head: {cluster['head']} is not a head "
                                   f"of {name} ({model.cfg.n_heads} heads)")
            result = roles.cluster_roles(model, vocab, rows, cluster["layer"], cluster["head"], cluster["k"], seed)
            write_table(roles.cluster_table(result), tmp / "role_clusters.csv")
            roles.cluster_figure(result, tmp / "role_clusters.png",
                                 f"{name}: role clusters, encoder layer {layer_number(model, 'encoder', cluster['layer'])} of "
                                 f"{len(model.encoder)}, head {cluster['head']}, "
                                 f"k={cluster['k']} ({TINY_NOTE})")
            done.append("role_clusters")

        if recon.supports_reconstruction(model):
            setting = settings["head_reconstruction"]
            rows = pairs(sample_rows(dataset, setting["n"], f"{seed}:head_reconstruction"))
            values, states, groups = recon.head_values(model, vocab, rows, setting["decoder_layer"])
            errors = recon.reconstruction_mse(values, states, groups, setting["test_fraction"], seed)
            atomic_write_text(tmp / RECONSTRUCTION_FILE, json.dumps(
                {"model": summary["model"], "seed": summary["seed"], "run": name, "mse": errors.tolist(),
                 "mean": float(errors.mean()), "positions": int(len(states)), "problems": len(rows)},
                indent=2) + "\n")
            metrics["interpret.head_reconstruction_mse"] = float(errors.mean())
            done.append("head_reconstruction")

        if onehot.has_discrete_roles(model):
            setting = settings["one_hotness"]
            rows = pairs(sample_rows(dataset, setting["n"], f"{seed}:one_hotness"))
            table, histograms = onehot.one_hotness(model, vocab, rows, params["evaluate"]["batch_size"],
                                                   setting["bins"])
            write_table(table, tmp / "one_hotness.csv")
            onehot.one_hotness_figure(histograms, table, tmp / "one_hotness.png",
                                      f"{name}: role one-hotness ({TINY_NOTE})")
            metrics.update({f"interpret.one_hot.{r['layer']}.{r['attention']}": r["share_above"]
                            for r in table.to_dict("records")})
            done.append("one_hotness")
        atomic_write_text(tmp / "analyses.json", json.dumps({"run": name, "module": module, "analyses": done}) + "\n")
    print(f"{name}: {', '.join(done)} -> {out}")
    log_outputs(mlflow_experiment(params, "mathematics"), summary, out, metrics)


def reconstruction_stage(params_path: str, interpret_dir: Path, models_dir: Path, outputs: dict[str, Path]) -> None:
    """The head-reconstruction table (MSE per head and mean, one row per run) and its bar chart, written
    to the paths of `outputs` (csv, md, png)."""
    from tprepro.interpret.head_reconstruction import mse_figure, mse_table

    params = load_params(params_path)
    grid = params["grid"]
    results, summaries = {}, {}
    for run in [f"{m}-s{s}" for m in grid["models"] for s in grid["seeds"]]:
        path = interpret_dir / run / RECONSTRUCTION_FILE
        if path.exists():  # layered Transformers only
            results[run] = json.loads(path.read_text(encoding="utf-8"))["mse"]
            summaries[run] = read_train_metrics(models_dir / run)
    if not results:
        raise TpreproError(f"{interpret_dir}: no {RECONSTRUCTION_FILE} of any run in the grid")
    table = mse_table(results)
    write_table(table, outputs["csv"])
    markdown = markdown_table(table)
    atomic_write_text(outputs["md"], markdown)
    mse_figure(table, outputs["png"], "Head reconstruction (Schlag et al., Sec. 6.1): held-out MSE of the "
               "encoder state z_t recovered from one head's value vector v_h(z_t), per run")
    print(markdown)
    for summary in summaries.values():
        run = tracked_run(mlflow_experiment(params, "mathematics"), summary)
        for path in outputs.values():
            run.log_artifact(path, "interpret")
        run.finish()
