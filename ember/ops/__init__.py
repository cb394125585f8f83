"""The op library: importing this package registers every op (see registry.py)."""
from . import (registry, pointwise, pointwise_arith, pointwise_math, pointwise_logic,  # noqa
               view, creation, random, convert, reduction, indexing, linalg, joining, reshaping,
               norms, scan, selection, sorting, scatter, scatter_flat, nn_ops, nn_norm_ops,
               nn_attention_ops, nn_loss_ops, random_sampling, special_ops, special_poly,
               misc_ops, misc_functions, misc_tensor, tensor_glue, tensor_storage, complex_ops,
               spectral, stft)
