"""The summarization experiment of Jiang et al. (2021): TPT-d vs TPT-c vs Transformer, scored with ROUGE.

corpus.py writes a CI corpus (standard-library docstrings) in each dataset's release
format; loaders.py reads those formats into parquet shards; tokenizer.py trains the
sentencepiece vocabulary and is the trainer's codec; decoding.py is beam search;
scoring.py is ROUGE and bootstrap intervals; table.py builds the paper's table;
stages.py wires them into pipeline stages.
"""

from pathlib import Path

import pyarrow as pa

TRAIN, VALIDATION, TEST = "train", "validation", "test"
SPLITS = (TRAIN, VALIDATION, TEST)
# The columns of every summarization dataset's shards: what loaders.write_dataset writes and the
# stages read (data.shards.open_dataset checks each shard against it).
SCHEMA = pa.schema([pa.field(name, pa.string(), nullable=False) for name in ("document", "summary", "id", "split")])
DATASETS = ("xsum", "cnndm", "wikihow", "arxiv")
DOCUMENTS_SUFFIX = ".documents.csv"  # a run's per-document scores: eval/<dataset>/<run>.documents.csv


def documents_path(evaluation: Path) -> Path:
    """The per-document scores written beside the evaluation CSV `evaluation`."""
    return evaluation.with_suffix(DOCUMENTS_SUFFIX)
