"""Replaying carbon-aware scheduling on a trace (Wiesner et al., Let's Wait Awhile)."""
