"""Training: the Trainer, checkpoints and exact resume, telemetry, compilation, the folder lock."""
