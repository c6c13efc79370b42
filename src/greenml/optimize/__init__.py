"""Advisors that cut training energy: GPU power limits, batch size, software knobs."""
