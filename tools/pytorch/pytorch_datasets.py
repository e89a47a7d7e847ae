"""The dataset readers of the PyTorch twins of minidl's trainers (tools/train_*_pytorch.py): the
same files minidl's data/ readers take, as uint8 image and int64 label tensors.

    images, labels = read_idx_split("/usr/share/datasets/fashion-mnist", "train")
    images, labels = read_cifar10_split(os.path.join(data_root(), CIFAR10_FOLDER), train=False)

Images are [N, C, H, W] uint8 (C is 1 for the IDX datasets), labels [N] int64.
"""
import gzip
import os

import numpy as np
import torch

# Where minidl's readers look without a directory (data/readers/data_root.h): $MINIDL_DATA when
# set and non-empty, else where Debian's dataset-* packages install; one subfolder per dataset.
DEFAULT_DATA_ROOT = "/usr/share/datasets"
FASHION_MNIST_FOLDER = "fashion-mnist"
CIFAR10_FOLDER = "cifar-10-batches-bin"

# data/readers/cifar10_format.h: a label byte, then 1024 red, 1024 green and 1024 blue bytes.
CIFAR10_IMAGE_SHAPE = (3, 32, 32)
CIFAR10_RECORD_BYTES = 1 + 3 * 32 * 32
CIFAR10_NUM_CLASSES = 10


def data_root():
    return os.environ.get("MINIDL_DATA") or DEFAULT_DATA_ROOT


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as file:
        data = file.read()
    dimensions = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dimensions)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dimensions).reshape(shape)


def read_idx_split(directory, prefix):
    """`prefix` is "train" or "t10k"; each file may be gzipped or not."""
    def find(name):
        for candidate in (name + ".gz", name):
            if os.path.exists(os.path.join(directory, candidate)):
                return os.path.join(directory, candidate)
        raise SystemExit(f"{directory}: no {name}[.gz]")
    images = read_idx(find(f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(find(f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
    return torch.from_numpy(images.copy()).unsqueeze(1), torch.from_numpy(labels)


def read_cifar10_split(directory, train):
    """data_batch_1.bin .. data_batch_5.bin for training, test_batch.bin for testing."""
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if train else ["test_batch.bin"]
    records = []
    for name in names:
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            raise SystemExit(f"{directory}: no {name} (the CIFAR-10 binary version, "
                             f"cifar-10-binary.tar.gz, unpacks to {CIFAR10_FOLDER}/)")
        data = np.fromfile(path, dtype=np.uint8)
        if data.size == 0 or data.size % CIFAR10_RECORD_BYTES != 0:
            raise SystemExit(f"{path}: {data.size} bytes, expected a positive multiple of the "
                             f"{CIFAR10_RECORD_BYTES}-byte record")
        records.append(data.reshape(-1, CIFAR10_RECORD_BYTES))
    records = np.concatenate(records)
    labels = records[:, 0].astype(np.int64)
    if labels.max() >= CIFAR10_NUM_CLASSES:
        raise SystemExit(f"{directory}: a label is {labels.max()}, expected 0-9")
    images = records[:, 1:].reshape(-1, *CIFAR10_IMAGE_SHAPE)
    return torch.from_numpy(np.ascontiguousarray(images)), torch.from_numpy(labels)
