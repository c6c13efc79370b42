"""Federated averaging of a linear classifier over scikit-learn's digits, measured by greenml.

Clients, rounds and the central baseline all run in this process (CPU, a few
seconds): each client trains on its shard from the global weights, the server
averages; greenml's FederatedMeter measures each client round and the bytes
exchanged, then the same epochs on the pooled data. Compare the two with:

    python examples/federated_digits.py --out fl.json
    greenml advise federated fl.json --link mobile
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier

from greenml.advise.federated import FederatedMeter

CLASSES = np.arange(10)


def local_fit(
    weights: list[np.ndarray], x: np.ndarray, y: np.ndarray, epochs: int
) -> SGDClassifier:
    model = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.01, random_state=0)
    model.partial_fit(x[:10], y[:10], classes=CLASSES)
    model.coef_, model.intercept_ = weights[0].copy(), weights[1].copy()
    for _ in range(epochs):
        model.partial_fit(x, y)
    return model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=20, help="local epochs per round")
    parser.add_argument("--out", default="fl.json")
    args = parser.parse_args()
    digits = load_digits()
    x, y = digits.data / 16.0, digits.target
    shards = np.array_split(np.random.default_rng(0).permutation(len(x)), args.clients)
    weights = [np.zeros((10, x.shape[1])), np.zeros(10)]
    meter = FederatedMeter()
    for client, idx in enumerate(shards):
        meter.data(str(client), [x[idx], y[idx]])
    for rnd in range(1, args.rounds + 1):
        updates = []
        for client, idx in enumerate(shards):
            with meter.client_round(str(client), rnd, received=weights) as sent:
                model = local_fit(weights, x[idx], y[idx], args.epochs)
                update = [model.coef_, model.intercept_]
                sent(update)
            updates.append((update, len(idx)))
        with meter.server(rnd):
            total = sum(n for _, n in updates)
            weights = [sum(u[i] * n for u, n in updates) / total for i in range(2)]
        model.coef_, model.intercept_ = weights
        print(f"round {rnd}: accuracy of the global model {model.score(x, y):.3f}")
    with meter.central():
        central = local_fit([np.zeros_like(w) for w in weights], x, y, args.epochs * args.rounds)
    print(f"central model accuracy {central.score(x, y):.3f}")
    meter.run.write(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
