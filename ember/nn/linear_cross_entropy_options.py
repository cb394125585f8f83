"""LinearCrossEntropyOptions: the chunking options of F.linear_cross_entropy (torch 2.13's
``torch.nn.LinearCrossEntropyOptions``), with torch's fields, checks and chunk-size rules.

    opts = nn.LinearCrossEntropyOptions(batch_chunk_size=1024, chunking_method=None)
    loss = F.linear_cross_entropy(hidden, head.weight, target, options=opts)
"""
import dataclasses

from ..core import dtype as D

__all__ = ["LinearCrossEntropyOptions"]

# (device type, dtype) -> (acc_policy, chunking_method) picked by "auto" (torch's table)
_AUTO_DEFAULTS = {
    ("cuda", D.bfloat16): ("compact", "aspect_ratio:2"),
    ("cuda", D.float16): ("compact", "aspect_ratio:2"),
    ("cpu", D.bfloat16): ("accurate", "aspect_ratio"),
    ("cpu", D.float16): ("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = ("compact", "aspect_ratio:2")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """How linear_cross_entropy splits the batch: ``batch_chunk_size`` rows per chunk, or
    a ``chunking_method`` ("auto", "aspect_ratio", "aspect_ratio:N", None);
    ``acc_policy`` and ``acc_dtype`` choose the accumulation precision."""
    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError("batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (D.float16, D.bfloat16,
                                                                 D.float32, D.float64):
            raise ValueError("acc_dtype must be one of {None, torch.float16, torch.bfloat16, "
                             f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                             "acc_dtype=None to let the op pick automatically.")

    @staticmethod
    def _chunk_size(num_batches, in_features, num_classes, method):
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        inc = -(-num_classes // in_features)
        target = -(-num_batches // inc)
        size = 1 << (target - 1).bit_length()        # the next power of 2 >= target
        return min(size // factor, num_batches)

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None):
        """The options with "auto" resolved for these sizes (torch's rules)."""
        policy, method = self.acc_policy, self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None
        if policy == "auto" or method == "auto":
            key = (getattr(device, "type", "cpu"), dtype)
            ap, cm = _AUTO_DEFAULTS.get(key, _AUTO_FALLBACK)
            policy = ap if policy == "auto" else policy
            method = cm if method == "auto" else method
        size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size,
                                                                      num_batches)
        if method is not None:
            size = self._chunk_size(num_batches, in_features, num_classes, method)
            if self.batch_chunk_size is not None and self.batch_chunk_size != size:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and "
                                 f"chunking_method ('{method}') give different chunk sizes "
                                 f"({self.batch_chunk_size} vs {size}); pass only one.")
        acc = self.acc_dtype
        if acc is None:
            low = dtype in (D.float16, D.bfloat16) and self.acc_policy == "auto"
            acc = D.float32 if low else dtype
        return dataclasses.replace(self, acc_policy=policy, chunking_method=method,
                                   batch_chunk_size=max(1, size), acc_dtype=acc)
