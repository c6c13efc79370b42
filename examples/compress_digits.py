"""Compress a small MLP trained on scikit-learn's bundled digits data set (offline, CPU).

    greenml compress examples/compress_digits.py:build --max-accuracy-drop 1 --plot pareto.svg

``build()`` trains the MLP with torch (a few seconds) and returns what
``greenml compress`` needs: the model, an evaluation (test accuracy in percent),
one example batch of 64 test images, and the training set (for distillation and
for fine-tuning after pruning). Nothing is downloaded: the digits ship inside
scikit-learn.
"""

from __future__ import annotations

from typing import Any

HIDDEN = 256
EPOCHS = 40
BATCH = 64


def build() -> dict[str, Any]:
    """The factory ``greenml compress`` calls."""
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from torch import nn

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data / 16.0, digits.target, test_size=0.25, random_state=0, stratify=digits.target
    )
    x_train_t = torch.tensor(x_train, dtype=torch.float32)
    y_train_t = torch.tensor(y_train, dtype=torch.long)
    x_test_t = torch.tensor(x_test, dtype=torch.float32)
    y_test_t = torch.tensor(y_test, dtype=torch.long)

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, 10),
    )  # fmt: skip
    train(model, x_train_t, y_train_t)

    def evaluate(predict: Any) -> float:
        """Test accuracy in percent of whatever variant ``predict`` runs."""
        logits = predict(x_test_t)
        return float((logits.argmax(dim=1) == y_test_t).float().mean()) * 100.0

    return {
        "model": model.eval(),
        "evaluate": evaluate,
        "example_inputs": x_test_t[:BATCH],
        "train_data": (x_train_t, y_train_t),
    }


def train(model: Any, x: Any, y: Any) -> None:
    """Plain cross-entropy training with Adam, mini-batches of 64."""
    import torch

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(EPOCHS):
        for idx in torch.randperm(len(y), generator=generator).split(BATCH):
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()


if __name__ == "__main__":
    from greenml.compress import compress

    spec = build()
    result = compress(spec.pop("model"), spec.pop("evaluate"), spec.pop("example_inputs"), **spec)
    print(result.recommendation.reason)
