"""The digits models' shared test harness: scikit-learn's digits split, training and accuracy.

Import it after `pytest.importorskip` of torch and sklearn. Fixed split (70/30, stratified,
random_state 0); training is seeded, so the same model comes out on every run of a CPU.
"""

import torch
from sklearn import datasets
from sklearn.model_selection import train_test_split
from torch import nn


def load_split(image_shape=None):
    """{"train": (x, y), "test": (x, y)} as torch tensors; x in [0, 1], rows of 64 values or
    reshaped to `image_shape` per sample (e.g. (1, 8, 8))."""
    x, y = datasets.load_digits(return_X_y=True)
    x = (x / 16.0).astype("float32")
    if image_shape is not None:
        x = x.reshape(-1, *image_shape)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.3, random_state=0, stratify=y)
    return {"train": (torch.from_numpy(x_train), torch.from_numpy(y_train)),
            "test": (torch.from_numpy(x_test), torch.from_numpy(y_test))}


def train(model, data, epochs, lr, seed, on_epoch=None):
    """Adam on cross-entropy, batches of 64 in a seeded order; `on_epoch(model, epoch)` runs
    before each epoch when given. Returns the model (in train mode)."""
    x_train, y_train = data["train"]
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for epoch in range(epochs):
        if on_epoch is not None:
            on_epoch(model, epoch)
        order = torch.randperm(len(x_train), generator=generator)
        for start in range(0, len(x_train), 64):
            batch = order[start:start + 64]
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x_train[batch]), y_train[batch]).backward()
            optimizer.step()
    return model


def train_float(model_class, data, epochs, lr, name):
    """Builds and trains a model_class() from seed 0 (printed); returns (the model in eval
    mode, its accuracy), checking the float model reaches 95 %."""
    seed = 0
    print(f"\ntraining seed={seed}")
    torch.manual_seed(seed)
    model = train(model_class(), data, epochs=epochs, lr=lr, seed=seed).eval()
    score = accuracy(model, data)
    print(f"float {name} accuracy {score:.2f} %")
    assert score >= 95.0
    return model, score


def accuracy(model, data):
    """Test-set accuracy in percent (the model is put in eval mode)."""
    x_test, y_test = data["test"]
    model.eval()
    with torch.no_grad():
        return 100.0 * float((model(x_test).argmax(1) == y_test).float().mean())


def report(scheme, score, float_score, limit):
    """Prints one accuracy line and returns the drop from float in points."""
    drop = float_score - score
    print(f"{scheme}: {score:.2f} % (float {float_score:.2f} %, drop {drop:.2f} points, "
          f"limit {limit})")
    return drop
