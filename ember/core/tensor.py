"""The Tensor: a strided view of a Storage, plus the fields autograd needs. No math here.

A tensor holds `_data`, a backend array (NumPy on cpu) that views its storage's flat buffer
with this tensor's shape, strides and offset. Shape/stride/offset are read off that array,
so views made by the backend (slicing, transposing) cost what the backend charges and
nothing more. Every operator and math method (`add`, `__add__`, `add_`, `sum`, ...) is
installed onto this class by the op registry (ember/ops/registry.py) from each op's one
definition; this file only knows about data and metadata.
"""
import numpy as np

from . import dtype as _dt
from .device import CPU, to_device
from .storage import Storage, storage_for, offset_in
from .strides import is_contiguous as _is_contiguous, wrap_dim, contiguous_strides
from .strides import is_channels_last_contiguous
from .meta import MetaArray, META
from . import meta as _meta
from numpy.lib.stride_tricks import as_strided as _as_strided


# Functions called as hook(tensor, what) before a tensor's values leave ember (item(),
# bool(), numpy(), printing...): the compiler's tracer turns such reads of traced tensors into
# graph breaks. Empty unless a trace is running, so the check costs one list test.
data_access_hooks = []


# Slots the layers above fill at their own import (this file sits at the bottom and names
# none of them):
# - ember/autograd/grad_mode.py sets `grad_mode_state` to its thread-local state, read only to
#   refuse requires_grad=True on an inference tensor outside inference mode;
# - ember/ops/creation.py sets `array_from_data(data, dtype)`, the backend array of nested
#   data for the legacy constructor ``Tensor(data)``.
grad_mode_state = None
array_from_data = None
# - ember/core/memory_stats.py sets `memory_hook(arr)` when memory counting is switched on
#   (the first call to a memory API): `_init` hands it each new tensor's array. Off, it
#   costs one global test per new tensor.
memory_hook = None


def _data_access(t, what):
    for hook in data_access_hooks:
        hook(t, what)


class _NamedConstant:
    """A module-level constant that prints as ``ember.<name>`` (torch's memory formats, layouts)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name


class memory_format(_NamedConstant):
    """How a copy lays out its dims: ``ember.contiguous_format``, ``ember.channels_last``..."""
    __slots__ = ()


class layout(_NamedConstant):
    """How a tensor stores its elements: ``ember.strided`` (dense), ``ember.sparse_coo``,
    ``ember.sparse_csr`` (ember.sparse's tensors; csc/bsr/bsc are named, not implemented)."""
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


class Size(tuple):
    """The shape of a tensor: a tuple of ints (``ember.Size([2, 3])``)."""
    __slots__ = ()

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to "
                            "ember.Size")
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__


_new = object.__new__


class Tensor:
    """A multi-dimensional array with autograd: ``ember.tensor([[1., 2.], [3., 4.]])``.

    Calling ``ember.Tensor(...)`` directly is the legacy constructor: ``ember.Tensor([1., 2.])``
    copies data into a default-dtype tensor, ``ember.Tensor(2, 3)`` allocates an uninitialised
    (here: zero-filled) 2x3 tensor.
    """
    # `_fw`: forward AD's tangents, {dual level: tangent}, set only on dual tensors and
    # otherwise never assigned (ember/autograd/forward_ad.py reads it with getattr).
    # `_conj`: set (True) only on the result of `conj()` of a complex tensor, which torch
    # marks with its conjugate bit (is_conj()); read with getattr (ember/ops/complex_ops.py)
    # `_grad_dtype`: a leaf's grad_dtype when set (a dtype, or None: any), else never
    # assigned (`grad_dtype_of` reads it with getattr; default: the tensor's dtype)
    __slots__ = ("_data", "_storage", "dtype", "_requires_grad", "_grad", "grad_fn", "_base",
                 "_grad_acc", "_hooks", "_retains_grad", "_post_acc_hooks", "_output_nr",
                 "_inference", "_fw", "_conj", "_grad_dtype", "__weakref__")

    def __init__(self, *args, device=None):
        dt = _dt.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], int):
            src = args[0]
            if isinstance(src, Tensor):  # shares src's memory, whatever its dtype (PyTorch)
                arr, dt = src._data, src.dtype
            else:
                arr = array_from_data(src, dt)
        else:
            shape = args if args else (0,)  # ember.Tensor() is an empty 1-D tensor
            arr = np.zeros(tuple(int(s) for s in shape), dt.np)
        _init(self, np.ascontiguousarray(arr, dtype=dt.np), dt)

    # ---- construction helper used everywhere: wrap a backend array ----
    @staticmethod
    def _make(arr, dtype):
        t = _new(Tensor)
        _init(t, arr, dtype)
        return t

    # ---- metadata ----
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[wrap_dim(dim, self._data.ndim)]

    def dim(self):
        return self._data.ndim

    def ndimension(self):
        return self._data.ndim

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    def stride(self, dim=None):
        item = self._data.itemsize
        st = tuple(s // item for s in self._data.strides)
        if dim is None:
            return st
        return st[wrap_dim(dim, self._data.ndim)]

    def storage_offset(self):
        return offset_in(self._storage_obj(), self._data)

    def is_contiguous(self, memory_format=contiguous_format):
        if memory_format is channels_last or memory_format is channels_last_3d:
            return self._data.ndim == (4 if memory_format is channels_last else 5) and \
                is_channels_last_contiguous(self._data.shape, self.stride())
        if memory_format is preserve_format:
            raise RuntimeError("Memory format preserve_format is not supported by "
                               "is_contiguous")
        return _is_contiguous(self._data.shape, self.stride())

    def element_size(self):
        return self.dtype.itemsize

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self._data.size * self.dtype.itemsize

    def data_ptr(self):
        if type(self._data) is MetaArray:
            return 0
        return self._data.ctypes.data if self._data.size else 0

    def untyped_storage(self):
        return self._storage_obj()

    def _storage_obj(self):
        s = self._storage
        if s is None:
            s = self._storage = storage_for(self._data)
        return s

    @property
    def device(self):
        return META if type(self._data) is MetaArray else CPU

    @property
    def is_cuda(self):
        return False

    @property
    def is_cpu(self):
        return type(self._data) is not MetaArray

    @property
    def is_meta(self):
        """True for a tensor on the meta device (shape, dtype and strides, no data)."""
        return type(self._data) is MetaArray

    @property
    def layout(self):
        return strided

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype._kind == 3

    def is_signed(self):
        return self.dtype.is_signed

    @property
    def _version(self):
        s = self._storage
        return 0 if s is None else s.version

    def _bump_version(self):
        self._storage_obj().version += 1

    # ---- autograd fields (behaviour lives in ember.autograd) ----
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value and self._inference:
            if not grad_mode_state.inference:
                raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                                   "InferenceMode is not allowed.")
        if value and self.dtype._kind < 2:      # floating and complex dtypes only
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        if not value and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self):
        return self.grad_fn is None

    def is_inference(self):
        return self._inference

    @property
    def grad(self):
        """The accumulated gradient of a leaf (None until a backward reaches it)."""
        if data_access_hooks:
            _data_access(self, "grad")
        g = self._grad
        if g is None and self.grad_fn is not None and not self._retains_grad:
            import warnings
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed "
                "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() "
                "on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
                "you access the leaf Tensor instead.", UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(value.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient and "
                                   "the tensor are the same size")
            want = grad_dtype_of(self)
            if want is not None and value.dtype is not want:
                raise RuntimeError(f"attempting to assign a gradient with dtype "
                                   f"'{_dt.CPP_NAMES[value.dtype.name]}' to a tensor with "
                                   f"grad_dtype '{_dt.torch_name(want)}'. The gradient must "
                                   "match the tensor's grad_dtype (defaults to the tensor's "
                                   "dtype). You can set the tensor's grad_dtype attribute with "
                                   "a specific dtype, or None to allow any dtype. Set grad_dtype "
                                   "with caution. Diverging the dtypes of a tensor and its "
                                   "gradient may break downstream systems that assume they "
                                   "match.")
        self._grad = value

    # ---- conversions to Python and NumPy ----
    def item(self):
        if data_access_hooks:
            _data_access(self, "item()")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        if type(self._data) is MetaArray:
            raise _meta.item_error()
        v = self._data.reshape(()).item() if self._data.ndim else self._data.item()
        return float(v) if self.dtype is _dt.bfloat16 else v

    def tolist(self):
        if data_access_hooks:
            _data_access(self, "tolist()")
        if type(self._data) is MetaArray:
            raise _meta.copy_out_error()
        if self.dtype is _dt.bfloat16:
            return self._data.astype(np.float32).tolist()
        return self._data.tolist()

    def numpy(self, *, force=False):
        if data_access_hooks:
            _data_access(self, "numpy()")
        if type(self._data) is MetaArray:
            raise _meta.numpy_error()
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if getattr(self, "_conj", False) and not force:
            raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. Use "
                               "tensor.resolve_conj().numpy() instead.")
        if self.dtype is _dt.bfloat16:    # NumPy has no bfloat16: torch refuses (force or not)
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data

    def _numpy(self):
        """The array behind the tensor for ember's own code: numpy()'s meta check, without
        its user-facing refusals (bfloat16 arrays are ml_dtypes')."""
        if type(self._data) is MetaArray:
            raise _meta.numpy_error()
        return self._data

    def __contains__(self, element):
        if isinstance(element, (Tensor, bool, int, float, complex, np.generic)):
            return bool((self == element).any())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                           f"passed in a {type(element)}.")

    # NumPy defers its binary operators to a Tensor operand (as torch's tensors ask, with
    # the same priority): ``np.float32(3) * t`` is a Tensor that keeps autograd, not an array
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        if data_access_hooks:
            _data_access(self, "__array__ (a call into NumPy)")
        if type(self._data) is MetaArray:
            raise _meta.numpy_error()
        if dtype is not None:
            return self._data.astype(dtype)
        return self._data

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if data_access_hooks:
            _data_access(self, "bool()")
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        if type(self._data) is MetaArray:
            raise _meta.item_error()
        return bool(self._data.reshape(())[()])

    def __float__(self):
        if data_access_hooks:
            _data_access(self, "float()")
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if type(self._data) is MetaArray:
            raise _meta.item_error()
        if self.dtype._kind == 3:     # torch's message for an imaginary part it would drop
            raise RuntimeError("value cannot be converted to type double without overflow")
        return float(self._data.reshape(())[()])

    def __int__(self):
        if data_access_hooks:
            _data_access(self, "int()")
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if type(self._data) is MetaArray:
            raise _meta.item_error()
        if self.dtype._kind == 3:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return int(self._data.reshape(())[()])

    def __index__(self):
        if data_access_hooks:
            _data_access(self, "__index__")
        if self.dtype.is_floating_point or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        if type(self._data) is MetaArray:
            raise _meta.item_error()
        return int(self._data.reshape(())[()])

    def __complex__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return complex(self._data.reshape(())[()])

    def __hash__(self):
        return id(self)

    def __repr__(self, *, tensor_contents=None):
        if data_access_hooks:
            _data_access(self, "printing")
        if type(self._data) is MetaArray:
            return _meta.meta_repr(self)
        from .printing import tensor_repr
        return tensor_repr(self)

    def __str__(self):
        return self.__repr__()

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __dlpack__(self, stream=None, **kwargs):
        return self._data.__dlpack__(**kwargs) if kwargs else self._data.__dlpack__()

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __reduce_ex__(self, proto):
        if type(self._data) is MetaArray:
            return (_rebuild_meta, (tuple(self._data.shape), self.stride(),
                                         self.dtype.name, self._requires_grad))
        return (_rebuild, (self._data.copy(), self.dtype.name, self._requires_grad))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = type(self).__new__(type(self))
        _init(t, self._data.copy() if type(self._data) is not MetaArray else
              _meta.meta_array(self._data.shape, self._data.dtype, self.stride()), self.dtype)
        t._requires_grad = self._requires_grad
        if self.grad is not None:
            t.grad = self.grad.__deepcopy__(memo)
        if hasattr(self, "__dict__"):
            import copy
            t.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = t
        return t

    def __setstate__(self, state):
        pass


def _init(t, arr, dtype):
    if not arr.size and arr.ndim:
        arr = _torch_empty_strides(arr)
    t._data = arr
    t.dtype = dtype
    t._storage = None
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._base = None
    t._grad_acc = None
    t._hooks = None
    t._retains_grad = False
    t._post_acc_hooks = None
    t._output_nr = 0
    t._inference = False
    if memory_hook is not None:
        memory_hook(arr)


def _torch_empty_strides(arr):
    """NumPy gives empty arrays zero strides; PyTorch gives them contiguous ones (sizes of 0
    counting as 1). Views of the result keep these, as PyTorch's views do."""
    item = arr.itemsize
    return _as_strided(arr, arr.shape, tuple(s * item for s in contiguous_strides(arr.shape)),
                       subok=True)    # subok: an empty meta array stays one


def _rebuild(arr, dtype_name, requires_grad):
    t = Tensor._make(arr, _dt._NAMES[dtype_name])
    t._requires_grad = requires_grad
    return t


def grad_dtype_of(t):
    """The dtype a gradient of leaf `t` takes (torch's grad_dtype): t's own unless set; None
    when set to accept any dtype."""
    return getattr(t, "_grad_dtype", t.dtype)


def make_view(base, arr):
    """A tensor viewing `base`'s storage through the backend array `arr` (which must alias it)."""
    t = _new(Tensor)
    _init(t, arr, base.dtype)
    t._data = arr  # a view keeps the strides the view gave it, even when empty
    t._storage = base._storage_obj()
    t._base = base if base._base is None else base._base
    t._inference = base._inference
    return t


def empty_meta(shape, dtype, strides=None, offset=0, requires_grad=False):
    """A new tensor on the meta device (ember/core/meta.py): `shape`, ember dtype `dtype`,
    element `strides` (contiguous when None), no data."""
    t = _new(Tensor)
    _init(t, _meta.meta_array(shape, dtype.np, strides, offset), dtype)
    if requires_grad:
        t.requires_grad = True
    return t


def _rebuild_meta(shape, strides, dtype_name, requires_grad):
    """Unpickle a meta tensor (pickling keeps its metadata, as torch's does)."""
    return empty_meta(shape, _dt._NAMES[dtype_name], strides, requires_grad=requires_grad)


def is_tensor(obj):
    """True if `obj` is an ember Tensor (or subclass)."""
    return isinstance(obj, Tensor)
