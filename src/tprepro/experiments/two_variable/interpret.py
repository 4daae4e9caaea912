"""The two-variable interpretation stage (`interpret-two-variable`): attention maps and, for the
Adaptive Universal Transformer, ponder maps."""

from __future__ import annotations

import json
from pathlib import Path

from tprepro.data.shards import open_dataset
from tprepro.experiments import mlflow_experiment
from tprepro.interpret.outputs import TINY_NOTE, load_for_analysis, log_outputs, write_attention, write_table
from tprepro.interpret.sampling import pairs, sample_rows
from tprepro.io import atomic_directory, atomic_write_text
from tprepro.params import load_params


def two_variable_stage(params_path: str, model_dir: Path, test_dir: Path, out: Path) -> None:
    """two_variable/interpret/<run>/: attention maps; ponder maps and the mean updates
    per expression type (Adaptive Universal Transformer)."""
    from tprepro.interpret import ponder_maps as ponder

    params = load_params(params_path)
    settings = params["interpret"]
    seed = settings["seed"]
    dataset = open_dataset(test_dir)
    model, vocab, summary = load_for_analysis(model_dir)
    name = summary["model"]
    metrics: dict[str, float] = {}
    done = []
    with atomic_directory(out) as tmp:
        examples = sample_rows(dataset, settings["examples"], f"{seed}:examples", ("question", "answer", "module"))
        write_attention(model, vocab, pairs(examples), settings["attention"]["head"], tmp,
                   f"two-variable {name} ({TINY_NOTE})", done)
        if ponder.has_ponder(model):
            symbols, updates = ponder.encoder_updates(model, vocab, pairs(examples))
            ponder.ponder_figure(symbols, updates, model.cfg.family.act_max_steps, tmp / "ponder_map.png",
                                 f"{name}: encoder updates per input position ({TINY_NOTE})")
            ponder_n = params["two_variable"]["interpret"]["ponder"]["n"]
            rows = sample_rows(dataset, ponder_n, f"{seed}:ponder", ("question", "answer", "module"))
            _, all_updates = ponder.encoder_updates(model, vocab, pairs(rows))
            table = ponder.mean_by_type([r["module"] for r in rows], all_updates)
            write_table(table, tmp / "ponder_by_type.csv")
            metrics["interpret.mean_encoder_updates"] = float(sum(map(sum, all_updates)) /
                                                              sum(map(len, all_updates)))
            done.append("ponder")
        atomic_write_text(tmp / "analyses.json", json.dumps({"model": name, "analyses": done}) + "\n")
    print(f"{name}: {', '.join(done)} -> {out}")
    log_outputs(mlflow_experiment(params, "two_variable"), summary, out, metrics)
