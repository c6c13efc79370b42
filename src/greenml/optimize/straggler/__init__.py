"""Straggler-aware GPU power: the planner, its runtime controller and a simulator."""
