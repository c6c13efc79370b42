"""Preemption-safe training: checkpoints, interruption signals, interval policy."""
