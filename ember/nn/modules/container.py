"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    heads = nn.ModuleDict({"cls": nn.Linear(8, 3), "box": nn.Linear(8, 4)})
"""
import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import chain, islice

from ...core.tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent, typename


def _abs_index(idx, n):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx + n if idx < 0 else idx


def _renumber(module):
    module.__dict__["_modules"] = OrderedDict(
        (str(i), m) for i, m in enumerate(module._modules.values()))


class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    >>> net[0], net[-1], net[:1]       # indexing and slicing (a slice is a Sequential)
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _key(self, idx):
        return next(islice(iter(self._modules), _abs_index(idx, len(self)), None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, self._key(idx))
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        out = Sequential()
        for layer in chain(self, other):
            out.append(layer)
        return out

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return self.extend(other)

    def __mul__(self, other):
        if not isinstance(other, int) or other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        out = Sequential()
        for _ in range(other):
            for layer in self:
                out.append(layer)
        return out

    __rmul__ = __mul__

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def append(self, module):
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert `module` before position `index`; later modules shift up."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential):
        """Append every module of an iterable; returns self."""
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of submodules, registered so that parameters() and to() see them.

    >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        out = ModuleList()
        for i, m in enumerate(chain(self, other)):
            out.add_module(str(i), m)
        return out

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index, module):
        """Insert `module` before position `index`."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module):
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        """Append every module of an iterable; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " +
                            type(modules).__name__)
        offset = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(offset + i), m)
        return self

    def __repr__(self):
        # runs of identical children print once: "(0-2): 3 x Linear(...)"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        groups = []                       # [start, end, repr]
        for i, r in enumerate(reprs):
            if groups and groups[-1][2] == r:
                groups[-1][1] = i
            else:
                groups.append([i, i, r])
        lines = []
        for start, end, r in groups:
            head = f"({start}): " if start == end else f"({start}-{end}): {end - start + 1} x "
            lines.append(_addindent(head + r, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of submodules.

    >>> heads = nn.ModuleDict({"a": nn.Linear(2, 2)}); heads["b"] = nn.ReLU()
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add modules from a mapping or an iterable of (key, module) pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value "
                            "pairs, but got " + type(modules).__name__)
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, m in enumerate(modules):
            if not isinstance(m, Iterable):
                raise TypeError("ModuleDict update sequence element #" + str(j) +
                                " should be Iterable; is" + type(m).__name__)
            if len(m) != 2:
                raise ValueError("ModuleDict update sequence element #" + str(j) +
                                 " has length " + str(len(m)) + "; 2 is required")
            self[m[0]] = m[1]


def _describe(p, typename_style=False):
    # as in PyTorch, ParameterList names the dtype and ParameterDict the tensor type
    if isinstance(p, Tensor):
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        what = typename(p) if typename_style else p.dtype
        return f"{kind} containing: [{what} of size {'x'.join(str(s) for s in p.shape)}]"
    return "Object of type: " + type(p).__name__


class ParameterList(Module):
    """A list of parameters (plain tensors are wrapped in Parameter).

    >>> ps = nn.ParameterList([nn.Parameter(ember.zeros(3)) for _ in range(2)])
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx, param):
        idx = _abs_index(idx, len(self))
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        """Add `value` at the end; returns self."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        """Append every value of an iterable; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " +
                            type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (plain tensors are wrapped in Parameter).

    >>> pd = nn.ParameterDict({"scale": nn.Parameter(ember.ones(3))})
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a "
                            f"string (type is '{type(key).__name__}'). Open an issue on github "
                            "if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._attr(key))

    def __setitem__(self, key, value):
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, self._attr(key), value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """Add entries from a mapping (a plain dict is taken in sorted key order, as in
        PyTorch) or from an iterable of (key, value) pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items())
        else:
            items = []
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError("ParameterDict update sequence element #" + str(j) +
                                    " should be Iterable; is" + type(p).__name__)
                if len(p) != 2:
                    raise ValueError("ParameterDict update sequence element #" + str(j) +
                                     " has length " + str(len(p)) + "; 2 is required")
                items.append(p)
        for k, v in items:
            self[k] = v

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({k}): {_describe(p, True)}" for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")
