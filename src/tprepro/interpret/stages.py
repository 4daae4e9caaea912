"""The interpretation stages (one `tprepro interpret-*` command each): load a trained model the way
evaluation does, sample rows from its data, run every analysis that applies to its architecture, and
write them into one output directory (swapped into place only when complete). Figures and tables are
logged to MLflow as artifacts of the model's training run."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tprepro.params import load_params
from tprepro.data.shards import open_dataset
from tprepro.errors import TpreproError
from tprepro.interpret.sampling import pairs, sample_rows
from tprepro.io import atomic_directory, atomic_write_text
from tprepro.experiments import mlflow_experiment
from tprepro.pipeline import MODEL_FILE, read_train_metrics, training_run

RECONSTRUCTION_FILE = "head_reconstruction.json"
TINY_NOTE = "tiny CPU model: expect little structure"
CPU = torch.device("cpu")  # small samples: the analyses run on the CPU wherever the model trained


def _load(model_dir: Path):
    from tprepro.evaluate.evaluate import load_trained

    summary = read_train_metrics(model_dir)
    model, vocab, _ = load_trained(model_dir / MODEL_FILE, CPU)
    return model, vocab, summary


def _write_table(frame, path: Path) -> None:
    atomic_write_text(path, frame.to_csv(index=False))


def _log(params: dict, experiment: str, summary: dict, out: Path, metrics: dict[str, float]) -> None:
    """Every file of `out` as an artifact (under interpret/) of the model's training run in `experiment`
    (an experiment's name), plus `metrics`."""
    run = training_run(mlflow_experiment(params, experiment), summary)
    if metrics:
        run.log_metrics(metrics, step=summary["steps"])
    for path in sorted(out.iterdir()):
        run.log_artifact(path, f"interpret/{out.name}")
    run.finish()


def _attention(model, vocab, rows, head: int, tmp: Path, title: str, done: list[str]) -> None:
    """Attention maps into `tmp`, for models built of multi-head attention."""
    from tprepro.interpret.attention_maps import as_records, attention_figure, attention_maps, has_attention_maps

    if not has_attention_maps(model):
        return
    maps = attention_maps(model, vocab, rows, head)
    atomic_write_text(tmp / "attention.json", json.dumps(as_records(maps)) + "\n")
    attention_figure(maps, tmp / "attention.png", title)
    done.append("attention")


def mathematics_stage(params_path: str, model_dir: Path, interpolate_dir: Path, out: Path) -> None:
    """results/interpret/mathematics/<run>/: attention maps; role clusters (models with role vectors);
    per-head reconstruction errors (layered Transformers); role one-hotness (TPT-d)."""
    from tprepro.interpret import head_reconstruction as recon
    from tprepro.interpret import one_hotness as onehot
    from tprepro.interpret import role_clusters as roles

    params = load_params(params_path)
    settings = params["interpret"]
    module, seed = settings["module"], settings["seed"]
    if module not in params["grid"]["modules"]:
        raise TpreproError(f"{params_path}: interpret.module: {module!r} is not in grid.modules "
                           f"({', '.join(params['grid']['modules'])})")
    dataset = open_dataset(interpolate_dir / module)
    model, vocab, summary = _load(model_dir)
    name = f"{summary['model']}-s{summary['seed']}"
    metrics: dict[str, float] = {}
    done = []
    with atomic_directory(out) as tmp:
        examples = pairs(sample_rows(dataset, settings["examples"], f"{seed}:examples"))
        _attention(model, vocab, examples, settings["attention"]["head"], tmp, f"{name} on {module} ({TINY_NOTE})",
                   done)

        cluster = settings["role_clusters"]
        if roles.has_role_vectors(model, cluster["layer"]):
            rows = pairs(sample_rows(dataset, cluster["n"], f"{seed}:role_clusters"))
            if not 0 <= cluster["head"] < model.cfg.n_heads:
                raise TpreproError(f"{params_path}: interpret.role_clusters.head: {cluster['head']} is not a head "
                                   f"of {name} ({model.cfg.n_heads} heads)")
            result = roles.cluster_roles(model, vocab, rows, cluster["layer"], cluster["head"], cluster["k"], seed)
            _write_table(roles.cluster_table(result), tmp / "role_clusters.csv")
            roles.cluster_figure(result, tmp / "role_clusters.png",
                                 f"{name}: role clusters, encoder layer {cluster['layer']}, head {cluster['head']}, "
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
            _write_table(table, tmp / "one_hotness.csv")
            onehot.one_hotness_figure(histograms, table, tmp / "one_hotness.png",
                                      f"{name}: role one-hotness ({TINY_NOTE})")
            metrics.update({f"interpret.one_hot.{r['layer']}.{r['attention']}": r["share_above"]
                            for r in table.to_dict("records")})
            done.append("one_hotness")
        atomic_write_text(tmp / "analyses.json", json.dumps({"run": name, "module": module, "analyses": done}) + "\n")
    print(f"{name}: {', '.join(done)} -> {out}")
    _log(params, "mathematics", summary, out, metrics)


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
    _write_table(table, outputs["csv"])
    markdown = markdown_table(table)
    atomic_write_text(outputs["md"], markdown)
    mse_figure(table, outputs["png"])
    print(markdown)
    for summary in summaries.values():
        run = training_run(mlflow_experiment(params, "mathematics"), summary)
        for path in outputs.values():
            run.log_artifact(path, "interpret")
        run.finish()


def markdown_table(frame) -> str:
    """A pipe table of `frame`, floats to 4 decimals."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row] for row in frame.itertuples(index=False)]
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells]) + "\n"


def two_variable_stage(params_path: str, model_dir: Path, test_dir: Path, out: Path) -> None:
    """results/interpret/two_variable/<model>/: attention maps; ponder maps and the mean updates
    per expression type (Adaptive Universal Transformer)."""
    from tprepro.interpret import ponder_maps as ponder

    params = load_params(params_path)
    settings = params["interpret"]
    seed = settings["seed"]
    dataset = open_dataset(test_dir)
    model, vocab, summary = _load(model_dir)
    name = summary["model"]
    metrics: dict[str, float] = {}
    done = []
    with atomic_directory(out) as tmp:
        examples = sample_rows(dataset, settings["examples"], f"{seed}:examples", ("question", "answer", "module"))
        _attention(model, vocab, pairs(examples), settings["attention"]["head"], tmp,
                   f"two-variable {name} ({TINY_NOTE})", done)
        if ponder.has_ponder(model):
            symbols, updates = ponder.encoder_updates(model, vocab, pairs(examples))
            ponder.ponder_figure(symbols, updates, model.cfg.family.act_max_steps, tmp / "ponder_map.png",
                                 f"{name}: encoder updates per input position ({TINY_NOTE})")
            rows = sample_rows(dataset, settings["ponder"]["n"], f"{seed}:ponder", ("question", "answer", "module"))
            _, all_updates = ponder.encoder_updates(model, vocab, pairs(rows))
            table = ponder.mean_by_type([r["module"] for r in rows], all_updates)
            _write_table(table, tmp / "ponder_by_type.csv")
            metrics["interpret.mean_encoder_updates"] = float(sum(map(sum, all_updates)) /
                                                              sum(map(len, all_updates)))
            done.append("ponder")
        atomic_write_text(tmp / "analyses.json", json.dumps({"model": name, "analyses": done}) + "\n")
    print(f"{name}: {', '.join(done)} -> {out}")
    _log(params, "two_variable", summary, out, metrics)


def n2f_stage(params_path: str, task: str, model_dir: Path, test_dir: Path, out: Path) -> None:
    """results/interpret/n2f/<task>/: the TP-N2F decoder's relation unbinding vectors, clustered."""
    from tprepro.interpret import unbinding_clusters as unbinding

    params = load_params(params_path)
    settings = params["interpret"]
    setting, seed = settings["unbinding"], settings["seed"]
    if task not in params["n2f"]["tasks"]:
        raise TpreproError(f"{params_path}: n2f.tasks: {task!r} is not listed")
    model, vocab, summary = _load(model_dir)
    if not unbinding.has_unbinding(model):
        raise TpreproError(f"{params_path}: interpret.unbinding.model: {setting['model']!r} has no TP-N2F "
                           "decoder (no relation unbinding vectors): choose tp_n2f or lstm2tp")
    rows = pairs(sample_rows(open_dataset(test_dir), setting["n"], f"{seed}:unbinding"))
    names, means, counts = unbinding.relation_means(model, vocab, rows, params["n2f"]["evaluate"]["batch_size"])
    if not names:
        raise TpreproError(f"{test_dir}: the sampled programs use no operator")
    labels, coords = unbinding.cluster_operators(means, setting["clusters"][task], seed)
    with atomic_directory(out) as tmp:
        _write_table(unbinding.members_table(names, labels, counts), tmp / "unbinding_clusters.csv")
        unbinding.cluster_figure(names, labels, coords, tmp / "unbinding_clusters.png",
                                 f"{task} {summary['model']}: relation unbinding vectors, "
                                 f"k={setting['clusters'][task]} ({TINY_NOTE})")
        atomic_write_text(tmp / "unbinding_vectors.json", json.dumps(
            {"operators": names, "counts": counts, "cluster": labels.tolist(), "pca": coords.tolist()}) + "\n")
    print(f"{task}/{summary['model']}: {len(names)} operators in {len(set(labels.tolist()))} clusters -> {out}")
    _log(params, "n2f", summary, out, {})
