"""Framework integrations: energy windows per step and epoch, and the power-limit optimizer.

Each module imports its framework, so import the one you use:
``greenml.integrations.lightning`` (PyTorch Lightning) or ``greenml.integrations.hf``
(Hugging Face transformers). Importing greenml itself never needs either.
"""
