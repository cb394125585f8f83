"""The single call path every op takes: unwrap -> promote -> kernel -> wrap -> record.

Pointwise ops get a function generated once per op at registration (`make_pointwise`), with
a short path for the common case (tensors of one dtype, no mode active). Other kinds call
`run_op`. Both end in `finish`, which wraps the backend result in a Tensor and, when grad
mode is on and an input requires grad, records an autograd node (ember/autograd/graph.py).
"""
import numpy as np

from .core import dtype as D
from .core.tensor import Tensor, _init, _new
from .core.strides import broadcast_shapes
from .autograd.grad_mode import state
from .autograd import graph

ndarray = np.ndarray
_asarray = np.asarray

LOWP = (D.float16, D.bfloat16)
TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
               "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
               "float64": "Double"}


def torch_name(dt):
    return TORCH_NAMES[dt.name]


def wrap(arr, dt):
    """A fresh tensor owning the backend array `arr` (0-d NumPy scalars become arrays)."""
    if type(arr) is not ndarray:
        arr = _asarray(arr)
    if arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    t = _new(Tensor)
    _init(t, arr, dt)
    if state.inference:
        t._inference = True
    return t


def operand(x):
    """(backend value, dtype, category) of a tensor or Python scalar, for promotion."""
    if x is None:
        return None, None, -1
    if isinstance(x, Tensor):
        return x._data, x.dtype, 0 if x._data.ndim else 1
    if isinstance(x, (bool, int, float, np.generic)):
        return x, D.scalar_dtype(x), 2
    raise TypeError(f"expected Tensor or number, but got {type(x).__name__}")


# ---- dtype rules of pointwise ops: promoted dtype -> (compute dtype, result dtype) ----
def rule_promote(dt, name):
    return dt, dt


def rule_float(dt, name):
    if dt.is_floating_point:
        return dt, dt
    f = D.get_default_dtype()
    return f, f


def rule_compare(dt, name):
    return dt, D.bool_


def rule_to_bool(dt, name):
    return dt, D.bool_


def rule_integral(dt, name):
    if dt.is_floating_point:
        raise RuntimeError(f'"{name}_cpu" not implemented for \'{torch_name(dt)}\'')
    return dt, dt


def rule_no_bool(dt, name):
    if dt is D.bool_:
        raise RuntimeError(f'"{name}_cpu" not implemented for \'Bool\'')
    return dt, dt


def _scalar_for(x, cdt):
    """Python scalars stay weak so NumPy keeps the tensor's dtype; wrap ints that overflow it."""
    if cdt.is_floating_point or isinstance(x, bool):
        return x
    if isinstance(x, float):
        return x
    info = np.iinfo(cdt.np) if cdt is not D.bool_ else None
    if info is not None and not (info.min <= x <= info.max):
        return np.array(x, dtype=np.int64).astype(cdt.np)
    return x


def broadcast_error(values):
    shapes = [np.shape(v) for v in values]
    broadcast_shapes(*shapes)  # raises PyTorch's message


def check_int_division(op, cdt, divisor):
    if not cdt.is_floating_point and np.any(np.asarray(divisor) == 0):
        raise RuntimeError("ZeroDivisionError")


def make_pointwise(op):
    """Generate the public function, and the in-place method, of a pointwise op."""
    kernel, ufunc, rule, name = op.kernel, op.ufunc, op.dtype_rule, op.name
    nin = len(op.inputs)
    errstate = op.errstate
    int_div = op.int_div_check
    defaults = op.attrs

    # result dtype when every input is a tensor of dtype `d` and the kernel may run as-is
    fast_dtype = {}
    for d in D.ALL:
        if d.np is None:
            continue
        try:
            cdt, rdt = rule(d, name)
        except RuntimeError:
            continue
        if cdt is d and not int_div and d not in LOWP:
            fast_dtype[d] = rdt

    def compute(args, attrs):
        values, metas = [], []
        for x in args:
            v, d, cat = operand(x)
            values.append(v)
            metas.append((d, cat))
        pdt = (D.result_type_of([m for m in metas if m[1] >= 0]) if nin > 1
               else metas[0][0])
        cdt, rdt = rule(pdt, name)
        kdt = D.float32 if cdt in LOWP else cdt   # low precision computes in float32
        arrays = []
        for v, (d, cat) in zip(values, metas):
            if cat < 0:
                arrays.append(None)
            elif cat == 2:
                arrays.append(_scalar_for(v, kdt))
            elif d is not kdt:
                arrays.append(v.astype(kdt.np))
            else:
                arrays.append(v)
        if int_div:
            check_int_division(op, cdt, arrays[1])
        try:
            if errstate:
                with np.errstate(all="ignore"):
                    r = kernel(np, *arrays, **attrs) if attrs or ufunc is None else ufunc(*arrays)
            else:
                r = kernel(np, *arrays, **attrs) if attrs or ufunc is None else ufunc(*arrays)
        except ValueError:
            broadcast_error(arrays)
            raise
        return r, rdt

    def function(*args, out=None, **kwargs):
        if len(args) != nin:
            args = _bind(op, args, kwargs)
        attrs = _attrs(op, kwargs, defaults) if kwargs else {}
        if state.modes:
            return state.modes[-1].call(op, args, attrs, out)
        a0 = args[0]
        if (nin == 1 and not attrs and isinstance(a0, Tensor) and ufunc is not None
                and not errstate and a0.dtype in fast_dtype):
            r = ufunc(a0._data)
            rdt = fast_dtype[a0.dtype]
        elif (nin == 2 and not attrs and ufunc is not None and not errstate
              and isinstance(a0, Tensor) and isinstance(args[1], Tensor)
              and a0.dtype is args[1].dtype and a0.dtype in fast_dtype):
            try:
                r = ufunc(a0._data, args[1]._data)
            except ValueError:
                broadcast_error([a0._data, args[1]._data])
                raise
            rdt = fast_dtype[a0.dtype]
        else:
            r, rdt = compute(args, attrs)
        result = wrap(r, rdt)
        if state.enabled and op.grads:
            for x in args:
                if isinstance(x, Tensor) and x._requires_grad:
                    graph.record(op, args, result, attrs)
                    break
        if out is not None:
            return copy_into_out(out, result)
        return result

    def inplace(self, *args, **kwargs):
        args = (self,) + args
        if len(args) != nin:
            args = _bind(op, args, kwargs)
        attrs = _attrs(op, kwargs, defaults) if kwargs else {}
        if state.modes:
            return state.modes[-1].call_inplace(op, args, attrs)
        graph.check_inplace(self)
        r, rdt = compute(args, attrs)
        if not D.can_cast(rdt, self.dtype):
            raise RuntimeError(f"result type {torch_name(rdt)} can't be cast to the desired "
                               f"output type {torch_name(self.dtype)}")
        if type(r) is not ndarray:
            r = _asarray(r)
        if r.shape != self._data.shape:
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                               f"broadcast shape {list(r.shape)}")
        needs_graph = state.enabled and op.grads and any(
            isinstance(x, Tensor) and x._requires_grad for x in args)
        old = graph.snapshot_for_inplace(op, self) if needs_graph else None
        np.copyto(self._data, r, casting="unsafe")
        if not (state.inference and self._inference):
            self._bump_version()
        if needs_graph:
            graph.record_inplace(op, args, self, attrs, old)
        return self

    return function, inplace


def _bind(op, args, kwargs):
    """Move tensor inputs passed by keyword (``add(input=a, other=b)``) into position."""
    args = list(args)
    names = op.inputs
    for i in range(len(args), len(names)):
        n = "input" if names[i] == "self" else names[i]
        if n in kwargs:
            args.append(kwargs.pop(n))
        elif names[i] in kwargs:
            args.append(kwargs.pop(names[i]))
        else:
            break
    # trailing positional attrs (e.g. clamp(x, 0, 1), add(a, b, 2)) become keyword attrs
    extra = args[len(names):]
    if extra:
        for (k, _), v in zip(op.attrs.items(), extra):
            kwargs[k] = v
        args = args[:len(names)]
    if len(args) != len(names):
        raise TypeError(f"{op.name}() missing required argument '{names[len(args)]}'")
    return tuple(args)


def _attrs(op, kwargs, defaults):
    out = {}
    for k, v in kwargs.items():
        if k not in defaults:
            raise TypeError(f"{op.name}() got an unexpected keyword argument '{k}'")
        d = defaults[k]
        if v is not d and (type(v) is not type(d) or v != d):
            out[k] = v
    return out


def copy_into_out(out, result):
    """Write an op's result into the user's `out=` tensor (resizing an empty one)."""
    if not D.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {torch_name(result.dtype)} can't be cast to the "
                           f"desired output type {torch_name(out.dtype)}")
    if out._data.shape != result._data.shape:
        out._data = np.empty(result._data.shape, out.dtype.np)
        out._storage = None
    np.copyto(out._data, result._data, casting="unsafe")
    out._bump_version()
    return out
