"""Train a small MLP on scikit-learn's bundled digits data set (offline, CPU).

Run it under greenml to see what the training cost:

    greenml run --name digits -- python examples/train_digits.py
"""

from __future__ import annotations

import warnings

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler


def main() -> None:
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data, digits.target, test_size=0.25, random_state=0, stratify=digits.target
    )
    scaler = StandardScaler().fit(x_train)
    x_train, x_test = scaler.transform(x_train), scaler.transform(x_test)
    best = 0.0
    for width in (64, 128, 256, 512):
        model = MLPClassifier(hidden_layer_sizes=(width, width), max_iter=300, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x_train, y_train)
        accuracy = model.score(x_test, y_test)
        best = max(best, accuracy)
        print(f"hidden={width:>3}x2  test accuracy={accuracy:.3f}  epochs={model.n_iter_}")
    print(f"best test accuracy: {best:.3f}")


if __name__ == "__main__":
    main()
