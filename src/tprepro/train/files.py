"""The files of a training run's model folder, named once for the stages that write and read them."""

MODEL_FILE = "model.pt"  # the trained model as exported for evaluation and serving
TRAIN_METRICS = "train_metrics.json"  # the run's summary: steps, loss, seconds, where it resumed from
