"""Estimating energy before or without a run: the offline estimator and its inputs."""
