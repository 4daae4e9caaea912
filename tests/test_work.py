"""tprepro.work: what a job does, in the units its speed is measured in."""

from tprepro.work import Work, fixed, preset_of, training


def test_a_training_job_counts_its_samples_checkpoints_and_requeues():
    train = {"steps": 1000, "batch_size": 64, "checkpoint_every": 300, "max_requeues": 5}
    job = training(train, "transformer_tiny")
    assert (job.kind, job.items, job.preset, job.steps, job.batch_size) == ("train", 64_000, "transformer_tiny", 1000, 64)
    assert job.checkpoints == 4 and job.max_requeues == 5 and job.unit == "samples trained"


def test_a_fixed_job_and_a_models_preset():
    assert fixed({}, {}) == Work("fixed") and Work("fixed").unit == ""
    assert preset_of({"tp": {"preset": "tp_transformer_tiny"}}, "tp") == "tp_transformer_tiny"
