"""Real data sets that ship in Debian: Fashion-MNIST (package
dataset-fashion-mnist) and scikit-learn's bundled 8x8 digits."""

import gzip
import os

import numpy as np

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def _read_idx(path):
    with gzip.open(path, "rb") as stream:
        data = stream.read()
    # IDX: 2 zero bytes, a type code, the number of dimensions, then big-endian sizes.
    dims = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_mnist(split):
    """(images as float32 N x 28 x 28 in [0, 1], labels as int64), 10 classes."""
    prefix = "train" if split == "train" else "t10k"
    images = _read_idx(os.path.join(FASHION_MNIST_DIR, f"{prefix}-images-idx3-ubyte.gz"))
    labels = _read_idx(os.path.join(FASHION_MNIST_DIR, f"{prefix}-labels-idx1-ubyte.gz"))
    return images.astype(np.float32) / 255.0, labels.astype(np.int64)


def digits(split):
    """scikit-learn's 1,797 8x8 digits, split 80/20 by a fixed permutation."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = (bunch.images / 16.0).astype(np.float32)
    labels = bunch.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(labels))
    cut = int(0.8 * len(labels))
    chosen = order[:cut] if split == "train" else order[cut:]
    return images[chosen], labels[chosen]


DATASETS = {"fashion-mnist": fashion_mnist, "digits": digits}


def load(name, split, channels, side):
    """Images as a float32 N x C x side x side tensor, normalised per data set,
    grayscale copied into C channels, resized bilinearly when side differs."""
    import torch
    import torch.nn.functional as F

    images, labels = DATASETS[name](split)
    # Normalised with the training split's statistics, whatever the split.
    reference = images if split == "train" else DATASETS[name]("train")[0]
    mean, std = float(reference.mean()), float(reference.std())
    x = torch.from_numpy((images - mean) / std).unsqueeze(1)
    if x.shape[-1] != side:
        x = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)
    if channels != 1:
        x = x.repeat(1, channels, 1, 1)
    return x.contiguous(), torch.from_numpy(labels)
