"""The disk a kept finished state costs (train/kept_states.py): one real training step of each preset through
the project's Trainer (Adam's moments exist from the first step), its final checkpoint.pt and model.pt measured
in bytes, fitted as fixed + rate x parameters:

    python -m benchmarks.kept_state_bytes --presets transformer_tiny tp_transformer_tiny transformer_paper \\
        tp_transformer_paper --commit "$(git rev-parse --short HEAD)"

Bytes do not depend on the data, so the step reads a few hand-made problems over the paper's 72 symbols.
"""

from __future__ import annotations

import argparse
import string
import tempfile
from pathlib import Path

import numpy as np

from tprepro.data.shards import Dataset, open_dataset, write_dataset
from tprepro.data.vocab import SPECIALS, Vocab
from tprepro.models.registry import count_parameters, resolve_model_config
from tprepro.params import TrainConfig, load_params
from tprepro.train import kept_states
from tprepro.train.files import CHECKPOINT_FILE, MODEL_FILE

from benchmarks.kit.report import markdown_table, stamp
from benchmarks.kit.runner import preset_run, train

SYMBOLS = sorted(set(string.printable[:94]) | {" "})[:72 - len(SPECIALS)]  # 68 characters: 72 symbols in all


def measure(preset: str, data: Dataset, vocab: Vocab, folder: Path) -> dict:
    """One step of `preset`: its parameters and the bytes of its kept state and model.pt."""
    config = TrainConfig.from_params({"train": {**load_params()["train"], "steps": 1, "batch_size": 4,
                                                "checkpoint_every": 1, "log_every": 1, "device": "cpu"}})
    trainer, _ = train(preset_run(preset, 1, resolve_model_config(preset, {}), config, {"data": data}, vocab),
                       folder=folder)
    trainer.export(folder / MODEL_FILE)
    (state,) = (folder / kept_states.KEPT).glob(f"*/{CHECKPOINT_FILE}")
    return {"preset": preset, "parameters": count_parameters(trainer.model),
            "kept_state_bytes": state.stat().st_size, "model_bytes": (folder / MODEL_FILE).stat().st_size}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", required=True)
    parser.add_argument("--commit", default="")
    args = parser.parse_args()
    vocab = Vocab((*SPECIALS, *SYMBOLS))
    with tempfile.TemporaryDirectory() as tmp:
        rows = [{"question": f"What is {a} + {a}?", "answer": str(2 * a), "module": "m", "split": "train-easy",
                 "difficulty": "easy"} for a in range(16)]
        data = open_dataset(write_dataset(Path(tmp) / "data", [rows], source="benchmark"))
        rows = [measure(preset, data, vocab, Path(tmp) / preset) for preset in args.presets]
    rate, fixed = np.polyfit([r["parameters"] for r in rows], [r["kept_state_bytes"] for r in rows], 1)
    print(markdown_table(["preset", "parameters", "kept state (bytes)", "model.pt (bytes)"],
                         [[r["preset"], f"{r['parameters']:,}", f"{r['kept_state_bytes']:,}", f"{r['model_bytes']:,}"]
                          for r in rows]))
    print(f"\nkept state = {fixed:,.0f} B + {rate:.3f} B x parameters; commit {args.commit}; {stamp()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
