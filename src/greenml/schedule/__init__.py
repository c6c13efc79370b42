"""When and where to run: carbon- and cost-aware planning, forecasts, spot planning."""
