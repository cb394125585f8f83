"""The op library: importing this package registers every op (see registry.py)."""
from . import (registry, pointwise, view, creation, random, convert, reduction,  # noqa
               indexing, linalg, joining, norms, scan, selection, sorting, scatter,
               scatter_flat, nn_ops, nn_attention_ops, nn_loss_ops)
