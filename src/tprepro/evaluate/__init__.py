"""Evaluation: cached greedy decoding, exact-match scoring, role sharpness, learning curves, the MLflow model."""
