"""Table 1 and the per-module table from evaluation files."""

import re

import pandas as pd
import pytest

from tprepro.errors import TpreproError
from tprepro.experiments.mathematics.figures import module_figure
from tprepro.report.published import published
from tprepro.io import record_digest
from tprepro.report.tables import module_table, read_eval, table1, table1_markdown


def eval_file(path, model, seed, rows):
    frame = pd.DataFrame(
        [{"model": model, "seed": seed, "module": m, "split": s, "n": n, "correct": c, "accuracy": c / n}
         for m, s, n, c in rows]
    )
    frame.to_csv(path, index=False)
    record_digest(path)  # as the evaluate stage writes it (its digest is required)
    return path


@pytest.fixture()
def evals(tmp_path):
    tp = [("a", "interpolate", 10, 10), ("b", "interpolate", 10, 5), ("a_big", "extrapolate", 10, 2),
          ("a", "train", 4, 4), ("b", "train", 4, 2)]
    tp2 = [("a", "interpolate", 10, 9), ("b", "interpolate", 10, 5), ("a_big", "extrapolate", 10, 4),
           ("a", "train", 4, 4), ("b", "train", 4, 4)]
    base = [("a", "interpolate", 10, 3), ("b", "interpolate", 10, 1), ("a_big", "extrapolate", 10, 0),
            ("a", "train", 4, 1), ("b", "train", 4, 0)]
    return read_eval([eval_file(tmp_path / "tp-s1.csv", "tp", 1, tp), eval_file(tmp_path / "tp-s2.csv", "tp", 2, tp2),
                      eval_file(tmp_path / "base-s1.csv", "base", 1, base)])


def test_seeds_are_pooled_per_module(evals):
    modules = module_table(evals)
    row = modules[(modules.model == "tp") & (modules.module == "a") & (modules.split == "interpolate")].iloc[0]
    assert (row.n, row.correct, row.accuracy) == (20, 19, 0.95)


def test_table1_averages_modules_per_seed_then_over_seeds(evals):
    training = {"tp": {"parameters": 1000, "steps": 5}, "base": {"parameters": 900, "steps": 5}}
    table = table1(evals, training, threshold=0.9).set_index("model")
    tp = table.loc["tp"]
    # seed 1: modules a 100%, b 50% -> 75%; seed 2: 90%, 50% -> 70%
    assert tp.interpolation_acc == pytest.approx(0.725)
    assert tp.interpolation_acc_std == pytest.approx(pd.Series([0.75, 0.70]).std())
    assert tp.interpolation_above == 0.5  # module a: 100% in seed 1, exactly 90% (not above) in seed 2
    assert tp.extrapolation_acc == pytest.approx(0.3) and tp.extrapolation_above == 0
    assert tp.train_acc == pytest.approx((0.75 + 1.0) / 2) and tp.seeds == 2
    base = table.loc["base"]
    assert base.seeds == 1 and pd.isna(base.interpolation_acc_std)


def test_table1_markdown_shows_seeds_and_the_published_numbers(evals):
    training = {"tp": {"parameters": 1000, "steps": 5}, "base": {"parameters": 900, "steps": 5}}
    table = table1(evals, training, threshold=0.9)
    papers = {"tp": published("mathematics").row_for("tp_transformer", "continuous_role"), "base": None}
    markdown = table1_markdown(table, 0.9, n_interp=2, n_extrap=1, papers=papers, budget="5 steps of batch 2")
    std = pd.Series([0.75, 0.70]).std() * 100
    assert f"| tp | 0.00M | 5 | 87.50% ± 17.68 (paper 87.25%, Δ +0.25) | 72.50% ± {std:.2f} (paper 80.67%, Δ -8.17) |" \
        in markdown
    assert "| base | 0.00M | 5 | 12.50% | 20.00% | 0 | 0.00% | 0 |" in markdown  # one seed: no ±, no paper row
    assert "1–2 seeds per model" in markdown and "ours: 5 steps of batch 2" in markdown
    assert "Schlag et al. (2019), Table 1" in markdown and "tp: TP-Transformer (ours), 700k steps" in markdown


def test_published_rows_match_architecture_and_binding():
    paper = published("mathematics")
    assert paper.row_for("tp_transformer", "continuous_role").values["interpolation_acc"] == 0.8067
    assert paper.row_for("tp_transformer", "discrete_role") is None  # TPT-d is not Table 1's model
    assert paper.row_for("universal_transformer") is None
    assert published("two_variable").row_for("adaptive_universal_transformer").values["a-b"] == 0.99
    with pytest.raises(TpreproError, match="no published numbers for 'nope'"):
        published("nope")


def test_figure_is_a_png(evals, tmp_path):
    module_figure(module_table(evals), tmp_path / "fig.png", "budget")
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"


def test_figure_labels_every_bar_zero_included(evals):
    import matplotlib.pyplot as plt

    from tprepro.experiments.mathematics.figures import draw_modules

    modules = module_table(evals)
    modules.loc[modules.index[0], "accuracy"] = 0.0
    fig = draw_modules(modules, "120 steps of batch 8")
    labels = [text.get_text() for ax in fig.axes for text in ax.texts]
    assert len(labels) == len(modules[modules["split"].isin(["interpolate", "extrapolate"])])
    assert "0%" in labels and fig._suptitle.get_text() == "120 steps of batch 8"
    plt.close(fig)


def test_bad_evaluation_files_are_named(tmp_path):
    with pytest.raises(TpreproError, match="missing.csv: unreadable"):
        read_eval([tmp_path / "missing.csv"])
    (tmp_path / "bad.csv").write_text("model,seed\nx,1\n")
    record_digest(tmp_path / "bad.csv")
    with pytest.raises(TpreproError, match=r"bad.csv: missing columns"):
        read_eval([tmp_path / "bad.csv"])


def test_metrics_files_hold_one_headline_per_model_and_no_nan(tmp_path):
    import json

    from tprepro.report.tables import write_metrics

    path = tmp_path / "metrics.json"
    write_metrics({"transformer": 0.25, "ut": float("nan"), "tpt_d": {"xsum": 31.5, "cnndm": float("nan")},
                   "empty": {"cnndm": float("nan")}}, path)
    assert json.loads(path.read_text()) == {"transformer": 0.25, "tpt_d": {"xsum": 31.5}}


@pytest.mark.parametrize("row, message", [
    ("m,1,a,train,0,0,0.5", "line 3, column 'n': '0' is below 1"),
    ("m,1,a,train,10,12,0.5", "line 3, column 'correct': 12 exceeds n = 10"),
    ("m,1,a,train,10,-1,0.5", "line 3, column 'correct': '-1' is below 0"),
    ("m,1.5,a,train,10,5,0.5", "line 3, column 'seed': '1.5' is not an integer"),
    ("m,1,a,train,,5,0.5", "line 3, column 'n': 'nan' is not a finite number"),
])
def test_evaluation_numbers_are_range_checked(tmp_path, row, message):
    path = tmp_path / "m-s1.csv"
    header = "model,seed,module,split,n,correct,accuracy\nm,1,b,test,0,0,\n"  # an empty set (N2F's cleaned test)
    path.write_text(header + "m,1,a,test,10,5,0.5\n")
    record_digest(path)
    assert read_eval([path])["correct"].tolist() == [0, 5]
    path.write_text(header + row + "\n")
    record_digest(path)
    with pytest.raises(TpreproError, match=re.escape(f"{path}: {message}")):
        read_eval([path])


def test_headline_metrics_name_the_experiment_metric_and_model():
    """`dvc metrics show` flattens the file's keys: each column reads <label>.<metric>.<model>."""
    from tprepro.report.tables import headline_metrics

    rows = [{"model": "tp_transformer", "interpolation_acc": 0.5, "train_acc": 0.9},
            {"model": "transformer", "interpolation_acc": 0.25, "train_acc": 0.8}]
    assert headline_metrics(rows, "mathematics", {"interpolation_acc": "interpolation_acc"}) == {
        "mathematics": {"interpolation_acc": {"tp_transformer": 0.5, "transformer": 0.25}}}


@pytest.mark.parametrize("edit, message", [
    ("interpolation_acc: 0.57", "interpolation_acc: 1000000.0", ),
    ("interpolation_acc: 0.57", "interpolation_acc: -5"),
    ("interpolation_acc: 0.57", "interpolation_acc: .nan"),
    ("interpolation_acc: 0.57", "interpolation_acc: abc"),
    ("interpolation_above: 6", "interpolation_above: 6.5"),
], ids=["1e6", "-5", "nan", "word", "fractional-count"])
def test_the_published_numbers_are_range_checked(tmp_path, edit, message):
    """Issue 46, gap 4: every number of published.yaml is a finite accuracy in [0, 1] or a whole module
    count; an edited one is an error naming the file and key, not a number printed as it is."""
    from importlib import resources

    from tprepro.report.published import read_published_numbers

    text = (resources.files("tprepro.report") / "published.yaml").read_text()
    assert edit in text
    path = tmp_path / "published.yaml"
    path.write_text(text.replace(edit, message, 1))
    assert read_published_numbers(resources.files("tprepro.report") / "published.yaml", "mathematics").rows
    with pytest.raises(TpreproError, match=re.escape(f"{path}: mathematics.rows.lstm.values.{message.split(':')[0]}: ")):
        read_published_numbers(path, "mathematics")
