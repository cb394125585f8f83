"""Tensor-parallel styles for nn.Linear and nn.Embedding: ColwiseParallel, RowwiseParallel.

torch's semantics (Megatron-style):

    ColwiseParallel   Linear weight Shard(0) (output features split), bias Shard(0);
                      Embedding weight Shard(1). Input Replicate; output Shard(-1).
    RowwiseParallel   Linear weight Shard(1) (input features split), bias Replicate;
                      Embedding weight Shard(0). Input Shard(-1) (Linear) / Replicate
                      (Embedding); the partial output is all-reduced: output Replicate.

``input_layouts`` says what the module's plain-tensor input *is* (it is wrapped with
``DTensor.from_local``) and it is then redistributed to the layout the style computes with;
``output_layouts`` is the layout the output is redistributed to; with ``use_local_output``
(default) the module returns the local tensor, else the DTensor.

The shape ember gives a parallelised module (simpler than torch's DTensor parameters, and
correct): each parameter becomes a ``LocalShardParameter``, an ordinary ``nn.Parameter``
holding this rank's piece (``model.fc1.weight.shape`` is the local shape), so any optimizer
steps it and clips it as usual; it also records ``device_mesh``, ``placements`` and the global
shape, and ``full_tensor()`` / ``to_dtensor()`` give the whole weight / the DTensor. The
module's ``forward`` is replaced by the DTensor computation (``ops.linear`` /
``ops.embedding`` on ``DTensor.from_local`` views of the parameters), whose backward runs
the matching collectives, so the local gradients are exactly the pieces of the full ones.
"""
from ....nn.modules.linear import Linear
from ....nn.modules.sparse import Embedding
from ....nn.parameter import Parameter
from ..dtensor import DTensor, distribute_tensor
from ..ops import embedding, linear
from ..placements import Placement, Replicate, Shard

__all__ = ["ParallelStyle", "ColwiseParallel", "RowwiseParallel", "LocalShardParameter"]


class LocalShardParameter(Parameter):
    """This rank's piece of a tensor-parallel parameter: a Parameter of the local shape that
    also knows its ``device_mesh``, ``placements`` and global ``global_shape``.

    >>> w = model.fc1.weight                   # after ColwiseParallel, on rank r of 2
    >>> w.shape, w.global_shape, w.placements
    (ember.Size([8, 16]), ember.Size([16, 16]), (Shard(dim=0),))
    >>> w.full_tensor().shape                  # all_gather (collective)
    ember.Size([16, 16])
    """

    def __new__(cls, data=None, device_mesh=None, placements=(), global_shape=None,
                requires_grad=True):
        # (the defaults let Tensor.__deepcopy__ build an empty one and fill its __dict__)
        t = super().__new__(cls, data, requires_grad)
        t.device_mesh = device_mesh
        t.placements = tuple(placements)
        t.global_shape = global_shape
        return t

    def __init__(self, *args, **kwargs):
        pass

    def to_local(self):
        return self

    def to_dtensor(self):
        """The DTensor this piece belongs to (differentiable: gradients reach this Parameter)."""
        return DTensor.from_local(self, self.device_mesh, self.placements,
                                  shape=self.global_shape)

    def full_tensor(self):
        """The whole parameter on every rank (collective)."""
        return self.to_dtensor().full_tensor()

    def __repr__(self):
        return (f"LocalShardParameter(placements={self.placements}, global_shape="
                f"{tuple(self.global_shape)}) containing:\n" + Parameter.__repr__(self))

    def __reduce_ex__(self, proto):
        return (LocalShardParameter, (self.detach(), self.device_mesh, self.placements,
                                      self.global_shape, self.requires_grad))


def _layouts(value, default):
    if value is None:
        return (default,)
    if isinstance(value, Placement):
        return (value,)
    return tuple(value)


class ParallelStyle:
    """How ``parallelize_module`` shards one module; subclasses implement ``_apply``."""
    src_data_rank = 0

    def _apply(self, module, device_mesh):
        raise NotImplementedError

    def _shard_params(self, module, device_mesh, placements):
        """Replace each parameter of `module` by its LocalShardParameter (rank
        `src_data_rank`'s values are distributed)."""
        for name, pl in placements.items():
            param = getattr(module, name, None)
            if param is None:
                continue
            dt = distribute_tensor(param.detach(), device_mesh, [pl],
                                   src_data_rank=self.src_data_rank)
            module.register_parameter(name, LocalShardParameter(
                dt.to_local(), device_mesh, dt.placements, dt.shape, param.requires_grad))

    def _install_forward(self, module, device_mesh, desired_input_layouts):
        style = self
        is_linear = isinstance(module, Linear)

        def forward(input):
            x = input
            if not isinstance(x, DTensor):
                x = DTensor.from_local(x, device_mesh, style.input_layouts)
            x = x._redistribute(_normalized(desired_input_layouts, x))
            weight = module.weight.to_dtensor()
            if is_linear:
                bias = module.bias.to_dtensor() if module.bias is not None else None
                out = linear(x, weight, bias)
            else:
                out = embedding(x, weight, module.padding_idx, module.max_norm,
                                module.norm_type, module.scale_grad_by_freq, module.sparse)
            if out.placements != _normalized(style.output_layouts, out):
                out = out.redistribute(placements=style.output_layouts)
            return out.to_local() if style.use_local_output else out

        module.forward = forward
        return module

    def __repr__(self):
        return (f"{type(self).__name__}(input_layouts={self.input_layouts}, output_layouts="
                f"{self.output_layouts}, use_local_output={self.use_local_output})")


def _normalized(layouts, dt):
    return tuple(Shard(p.dim % dt.ndim) if isinstance(p, Shard) else p for p in layouts)


def _check_module(style, module):
    if not isinstance(module, (Linear, Embedding)):
        raise NotImplementedError(f"{style} currently only support nn.Linear and nn.Embedding!")
    if hasattr(module.weight, "device_mesh"):
        raise RuntimeError(f"{type(module).__name__} is already tensor-parallel "
                           "(parallelize_module was applied to it before)")


class ColwiseParallel(ParallelStyle):
    """Shard a Linear's output features (weight and bias Shard(0)) or an Embedding's
    embedding dim (weight Shard(1)). Input: Replicate (``input_layouts``); output: Shard(-1)
    (``output_layouts``), returned as the local tensor with ``use_local_output=True``.

    >>> parallelize_module(mlp, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    """

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = _layouts(input_layouts, Replicate())
        self.output_layouts = _layouts(output_layouts, Shard(-1))
        self.desired_input_layouts = (Replicate(),)
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        _check_module("ColwiseParallel", module)
        if isinstance(module, Linear):
            self._shard_params(module, device_mesh, {"weight": Shard(0), "bias": Shard(0)})
        else:
            self._shard_params(module, device_mesh, {"weight": Shard(1)})
        return self._install_forward(module, device_mesh, self.desired_input_layouts)


class RowwiseParallel(ParallelStyle):
    """Shard a Linear's input features (weight Shard(1), bias Replicate) or an Embedding's
    rows (weight Shard(0)). Input: Shard(-1) for Linear, Replicate for Embedding
    (``input_layouts`` default Shard(-1)); the partial output is all-reduced to Replicate
    (``output_layouts``).

    >>> parallelize_module(mlp, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    """

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = _layouts(input_layouts, Shard(-1))
        self.output_layouts = _layouts(output_layouts, Replicate())
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh):
        _check_module("RowwiseParallel", module)
        if isinstance(module, Linear):
            self.desired_input_layouts = (Shard(-1),)
            self._shard_params(module, device_mesh, {"weight": Shard(1), "bias": Replicate()})
        else:
            self.desired_input_layouts = (Replicate(),)
            self._shard_params(module, device_mesh, {"weight": Shard(0)})
        return self._install_forward(module, device_mesh, self.desired_input_layouts)
