"""Parameter, Buffer and UninitializedParameter: tensors that a Module registers on assignment.

    w = nn.Parameter(ember.randn(3, 4))      # requires_grad=True, shares randn's storage
    m.running = nn.Buffer(ember.zeros(4))    # registered as a (persistent) buffer
"""
from ..core.tensor import Tensor, _init
from ..ops.creation import empty


def _alias(cls, data):
    """A `cls` instance viewing `data`'s storage (PyTorch's ``_make_subclass``).

    This is the one place nn touches Tensor internals: a subclass instance must share the
    storage object itself (not a copy, not a graph-linked view), and Tensor has no public way
    to build one."""
    t = Tensor.__new__(cls)
    _init(t, data._data, data.dtype)
    t._storage = data._storage_obj()
    return t


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning it to a Module attribute registers it.

    ``nn.Parameter(ember.zeros(3))`` shares the data's storage and requires grad by default.
    Results of ops on a Parameter are plain Tensors.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        t = _alias(cls, data)
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (type(self), (self.detach(), self.requires_grad))


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute.

    ``m.stats = nn.Buffer(ember.zeros(3), persistent=False)`` registers a buffer that is left
    out of ``state_dict()``. The Buffer shares the given tensor's storage.
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        t = _alias(cls, data)
        t._requires_grad = data.requires_grad
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass

    def __reduce_ex__(self, proto):
        return (_rebuild_buffer, (self.detach(), self.persistent))


def _rebuild_buffer(data, persistent):
    return Buffer(data, persistent=persistent)


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (lazy modules); ``materialize(shape)`` makes it
    a real Parameter in place."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return super().__new__(cls, empty(0, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None):
        """Give the parameter its `shape` (uninitialised values) and turn it into a Parameter."""
        self.data = empty(shape, dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return "<UninitializedParameter>"

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to "
                           "load an uninitialized parameter into an initialized one. Call "
                           "`forward` to initialize the parameters before accessing their "
                           "attributes.")


def is_lazy(param):
    """True for an UninitializedParameter."""
    return isinstance(param, UninitializedParameter)


# like an exact Tensor, an exact Parameter (or Buffer) never dispatches __torch_function__
from ..autograd.overrides import _PLAIN_TYPES  # noqa: E402
_PLAIN_TYPES.update((Parameter, Buffer))   # a Buffer is a plain tensor in PyTorch
