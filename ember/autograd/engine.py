"""The backward engine: walk the graph from the outputs, in dependency order.

A node runs once every gradient flowing into it has arrived (dependency counting); among
ready nodes the most recently created runs first, as in PyTorch. Gradients for a node's
inputs are reduced to each input's shape and cast to its dtype, summed when a tensor was
used several times, and finally added into the leaves' ``.grad``. Saved tensors are freed
after use unless ``retain_graph``; with ``create_graph`` the backward itself is recorded.
"""
import heapq
import threading

import numpy as np

from .grad_mode import state
from ..core.tensor import Tensor, grad_dtype_of
from ..core.meta import MetaArray, MetaData, meta_array
from .graph import AccumulateGrad, edge_of, anomaly_check, report_trace

_ACC = AccumulateGrad      # a final class: `type(node) is _ACC` tells a leaf's node


def _fix_grad(node, i, g, meta):
    """Reduce a broadcast gradient to its input's shape and cast it to the input's dtype."""
    shape, dt = meta
    if tuple(g._data.shape) != tuple(shape):
        try:
            g = g.sum_to_size(shape)
        except RuntimeError:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index "
                               f"{i} - got {list(g._data.shape)} but expected shape compatible "
                               f"with {list(shape)}") from None
    if g.dtype is not dt:
        if g.dtype._kind == 3 and dt._kind != 3:
            g = g.real       # a real input of a complex op: the real part (torch's rule)
        g = g.to(dt)
    return g


def _leaf_hooks(var, g):
    """A leaf's ``register_hook`` hooks, in order; each may replace the gradient."""
    for h in list(var._hooks):
        r = h(g)
        if r is not None:
            g = _checked(h, g, r)
    return g


def _checked(hook, old, new):
    """A tensor hook may replace the gradient, but not change its shape."""
    if tuple(new.shape) != tuple(old.shape):
        raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has changed the size of "
                           "value")
    return new


def accumulate_into(var, g, owned, create_graph):
    """PyTorch's rule for adding `g` into leaf `var`'s ``.grad`` (no hooks; the one copy of
    it, also used by compiled code). The first gradient is kept as is when `owned` (no one
    else holds it) and laid out like `var` (any layout, under
    ``enforce_grad_layout_policy(False)``), else copied into `var`'s layout; later ones are
    added in place, or out of place when building a graph (create_graph, or a ``.grad``
    that requires grad)."""
    want = grad_dtype_of(var)          # var.dtype, unless grad_dtype says otherwise
    if want is not None and g.dtype is not want:
        g, owned = g.to(want), True
    if var._grad is None:
        dt = g.dtype if want is None else want
        if create_graph:
            var._grad = g
        elif owned and g._base is None and g.grad_fn is None and \
                (g._data.strides == var._data.strides or not state.grad_layout_enforced):
            var._grad = g
        else:
            try:
                arr = np.empty_like(var._data, dtype=dt.np)
                np.copyto(arr, g._data, casting="unsafe")
            except MetaData:    # a meta leaf: its layout, nothing to copy
                arr = meta_array(var._data.shape, dt.np, var.stride())
            var._grad = Tensor._make(arr, dt)
    elif create_graph or var._grad._requires_grad:
        var._grad = var._grad + g
    else:
        try:
            np.add(var._grad._data, g._data, out=var._grad._data, casting="unsafe")
        except MetaData:        # a meta .grad: nothing to add
            pass
        var._grad._bump_version()


def _accumulate(node, g, owned, create_graph):
    """Add `g` (its leaf hooks already applied) into the leaf's ``.grad``, with the
    AccumulateGrad node's own hooks around it, in PyTorch's order."""
    var = node.variable
    if not var._requires_grad:   # requires_grad was turned off after the graph was built
        return
    if node._prehooks:
        for h in list(node._prehooks):
            r = h((g,))
            if r is not None:
                g, owned = r[0], False
    accumulate_into(var, g, owned, create_graph)
    if var._post_acc_hooks:
        for h in list(var._post_acc_hooks):
            h(var)
    if node._hooks:
        for h in list(node._hooks):
            h((), (g,))


# Final callbacks: one list per running backward of this thread (a stack, since a hook may
# itself run a backward). DistributedDataParallel queues its "wait for the gradient
# all-reduces" here from a gradient hook, so it runs before backward() returns.
_final = threading.local()


def queue_callback(callback):
    """Run ``callback()`` once the backward now running has finished, before it returns
    (torch's ``Variable._execution_engine.queue_callback``). Callbacks run in the order
    queued; one may queue another. Only valid while a backward runs (e.g. from a hook).

        def hook(param):
            queue_callback(lambda: print("backward done"))
    """
    stack = getattr(_final, "stack", None)
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[-1].append(callback)


def _is_checkpoint_valid():
    """False inside a backward that computes only some gradients (``autograd.grad`` or
    ``backward(inputs=...)``), where the reentrant checkpoint cannot accumulate its inputs'
    gradients (torch's ``torch.autograd._is_checkpoint_valid``)."""
    partial = getattr(_final, "partial", None)
    return not partial or not partial[-1]


def _run_final_callbacks(callbacks):
    i = 0
    while i < len(callbacks):      # a callback may queue more
        callbacks[i]()
        i += 1


def run_backward(roots, root_grads, retain_graph, create_graph, inputs=None,
                 accumulate=True, allow_unused=False):
    """Run backward from `roots`; return the gradients of `inputs` when given."""
    root_edges = []
    for i, t in enumerate(roots):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        root_edges.append(edge_of(t))
    deps = _dependencies(root_edges)

    captures = targets = needed = None
    if inputs is not None:
        captures = {}
        targets = {}
        for k, t in enumerate(inputs):
            e = edge_of(t)
            if e[0] is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            targets.setdefault(e, []).append(k)
        needed = _needed_nodes(root_edges, {n for n, _ in targets})

    # buffers: node -> {output_nr: summed gradient}. `owned_flags` remembers, for the
    # gradients bound for a leaf, those that no one else holds (the leaf may keep them as
    # .grad without a copy); other nodes never need to know
    buffers = {}
    owned_flags = {}
    for (node, nr), g in zip(root_edges, root_grads):
        _add_to_buffer(buffers, owned_flags, node, nr, g, False)

    prev = state.enabled
    state.enabled = bool(create_graph)
    stack = getattr(_final, "stack", None)
    if stack is None:
        stack = _final.stack = []
    callbacks = []
    stack.append(callbacks)
    # whether this backward computes only some gradients (autograd.grad, backward(inputs=)):
    # the reentrant checkpoint refuses to run inside one (_is_checkpoint_valid)
    partial = getattr(_final, "partial", None)
    if partial is None:
        partial = _final.partial = []
    partial.append(inputs is not None)
    heappush, heappop = heapq.heappush, heapq.heappop
    run_node = _run_node           # looked up once per backward (the profiler wraps it)
    leaf_args = (create_graph, accumulate, captures, targets, needed)
    # a leaf's gradient may go straight into its .grad (_deliver) unless this backward
    # captures gradients (autograd.grad) or does not accumulate
    plain_leaves = captures is None and accumulate
    try:
        ready = []
        for node, _ in root_edges:
            if node not in deps and all(r[1] is not node for r in ready):
                heappush(ready, (-node._seq, node))
        # each node is pushed exactly once: a root only when nothing else feeds it, any
        # other node when its last contribution arrives. Leaves run as soon as their last
        # contribution arrives (PyTorch gives AccumulateGrad the highest priority). Heap
        # entries are (-creation number, node): the numbers are unique, so nodes are never
        # compared
        while ready:
            node = heappop(ready)[1]
            buf = buffers.pop(node, None)
            if buf is None:
                buf = {}
            if type(node) is _ACC:
                _run_leaf(node, buf, owned_flags.pop(node, None) or {}, *leaf_args)
                continue
            if node._tensor_prehooks is not None or node._retain_prehooks is not None:
                buf = _call_tensor_prehooks(node, buf)
            if captures is not None:
                _capture(node, buf, targets, captures)
                if node not in needed:
                    continue
            outs = run_node(node, buf, create_graph)
            if not retain_graph:
                node.release()
            for (nxt, nr), g in zip(node.next_functions, outs):
                if nxt is None:
                    continue
                n = deps[nxt] - 1
                deps[nxt] = n
                if type(nxt) is _ACC:
                    if n == 0 and nxt not in buffers:
                        # a leaf's only gradient: straight in (the common case)
                        if g is not None:
                            if plain_leaves:
                                _deliver(nxt, nr, g, buf, create_graph)
                            else:
                                _run_leaf(nxt, {nr: g}, {nr: _is_own(g, buf)}, *leaf_args)
                    else:
                        _leaf_part(nxt, nr, g, n, buf, buffers, owned_flags, leaf_args)
                    continue
                if g is not None:
                    nbuf = buffers.get(nxt)
                    if nbuf is None:
                        buffers[nxt] = {nr: g}
                    elif nr in nbuf:
                        nbuf[nr] = nbuf[nr] + g
                    else:
                        nbuf[nr] = g
                if n == 0 and (needed is None or nxt in needed):
                    heappush(ready, (-nxt._seq, nxt))
        if callbacks:
            _run_final_callbacks(callbacks)
    finally:
        stack.pop()
        partial.pop()
        state.enabled = prev

    if inputs is not None:
        return [captures.get(k) for k in range(len(inputs))]
    return None


def _deliver(acc, nr, g, buf, create_graph):
    """A leaf's only gradient `g` (from the node whose incoming gradients are `buf`) into its
    ``.grad``: what `_run_leaf` does, with the common case (no hooks, a float ``.grad`` that
    needs no graph) inline."""
    var = acc.variable
    if nr or acc._tensor_prehooks is not None or acc._retain_prehooks is not None or \
            var._hooks:
        _run_leaf(acc, {nr: g}, {nr: _is_own(g, buf)}, create_graph, True, None, None, None)
        return
    grad = var._grad
    if (grad is None or create_graph or grad._requires_grad or acc._prehooks or
            var._post_acc_hooks or acc._hooks or not var._requires_grad):
        _accumulate(acc, g, _is_own(g, buf), create_graph)
        return
    # accumulate_into's in-place add
    try:
        np.add(grad._data, g._data, out=grad._data, casting="unsafe")
    except MetaData:        # a meta .grad: nothing to add
        pass
    st = grad._storage
    if st is None:
        st = grad._storage_obj()
    st.version += 1


def _leaf_part(nxt, nr, g, n, buf, buffers, owned_flags, leaf_args):
    """One of several gradients bound for leaf node `nxt` (`n` still to come): summed in
    its buffer, which runs once the last arrives."""
    nbuf = buffers.get(nxt)
    if g is not None:
        if nbuf is None:
            buffers[nxt] = {nr: g}
            owned_flags[nxt] = {nr: _is_own(g, buf)}
        elif nr in nbuf:
            nbuf[nr] = nbuf[nr] + g
            owned_flags[nxt][nr] = True
        else:
            nbuf[nr] = g
            owned_flags[nxt][nr] = _is_own(g, buf)
    if n == 0 and nxt in buffers:
        _run_leaf(nxt, buffers.pop(nxt), owned_flags.pop(nxt), *leaf_args)


def _run_leaf(node, buf, owned, create_graph, accumulate, captures, targets, needed):
    """A leaf's AccumulateGrad: its hooks, then the sum of its gradients into ``.grad``."""
    g = buf.get(0)
    if g is not None:       # the gradient takes the leaf's grad_dtype (torch casts it here)
        want = grad_dtype_of(node.variable)
        if want is not None and g.dtype is not want:
            buf[0], owned[0] = g.to(want), True
    if node._tensor_prehooks is not None or node._retain_prehooks is not None:
        buf = _call_tensor_prehooks(node, buf)
    if node.variable._hooks and 0 in buf:
        g = _leaf_hooks(node.variable, buf[0])
        if g is not buf[0]:
            buf[0], owned[0] = g, False
    if captures is not None:
        _capture(node, buf, targets, captures)
        if node not in needed:
            return
    g = buf.get(0)
    if g is not None and accumulate:
        _accumulate(node, g, owned.get(0, False), create_graph)


def _dependencies(root_edges):
    """How many gradient contributions each node waits for (a node reached from two roots,
    e.g. both outputs of aminmax, is walked once); roots nothing feeds are absent."""
    deps = {}
    stack = list(dict.fromkeys(n for n, _ in root_edges))
    seen = set(stack)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            n = deps.get(nxt)
            if n is None:
                deps[nxt] = 1
                # (a root is seen but has no count yet; a leaf's node leads nowhere)
                if nxt not in seen and type(nxt) is not _ACC:
                    seen.add(nxt)
                    stack.append(nxt)
            else:
                deps[nxt] = n + 1
    return deps


def _is_own(g, buf):
    """A gradient a node passed through unchanged (one of its incoming ones) is not its own."""
    for x in buf.values():
        if g is x:
            return False
    return True


def _capture(node, buf, targets, captures):
    """autograd.grad: keep the gradients flowing into the requested inputs' edges."""
    for nr, g in buf.items():
        for k in targets.get((node, nr), ()):
            captures[k] = g


def _needed_nodes(root_edges, target_nodes):
    """Nodes from which some target is reachable (only these run for autograd.grad)."""
    memo = {}
    stack = [(n, False) for n, _ in root_edges]
    while stack:
        node, expanded = stack.pop()
        if node in memo and not expanded:
            continue
        if expanded:
            memo[node] = node in target_nodes or any(
                memo.get(n, False) for n, _ in node.next_functions if n is not None)
            continue
        memo.setdefault(node, False)
        stack.append((node, True))
        for n, _ in node.next_functions:
            if n is not None and n not in memo:
                stack.append((n, False))
    return {n for n, v in memo.items() if v}


def _add_to_buffer(buffers, owned_flags, node, nr, g, owned):
    buf = buffers.setdefault(node, {})
    own = owned_flags.setdefault(node, {})
    if nr in buf:
        buf[nr] = buf[nr] + g
        own[nr] = True
    else:
        buf[nr] = g
        own[nr] = owned


def _call_tensor_prehooks(node, buf):
    if node._tensor_prehooks:
        for nr, hooks in node._tensor_prehooks.items():
            if nr in buf:
                for h in list(hooks):
                    r = h(buf[nr])
                    if r is not None:
                        buf[nr] = _checked(h, buf[nr], r)
    if node._retain_prehooks:
        for nr, hooks in node._retain_prehooks.items():
            if nr in buf:
                for h in list(hooks):
                    h(buf[nr])
    return buf


def _run_node(node, buf, create_graph):
    if len(buf) == 1 and 0 in buf:
        grads = (buf[0],)
    else:
        grads = tuple(buf.get(i) for i in range(max(buf) + 1)) if buf else (None,)
    if node._prehooks:
        for h in list(node._prehooks):
            r = h(grads)
            if r is not None:
                grads = tuple(r)
    if grads[0] is None and all(g is None for g in grads):
        return (None,) * len(node.next_functions)
    try:
        outs = node.apply(grads)
    except Exception:
        if state.anomaly:
            report_trace(node)
        raise
    fixed = []
    for g, meta in zip(outs, node._input_meta):
        if g is not None and meta is not None:
            shape, dt = meta
            if type(g) is not Tensor and not isinstance(g, Tensor):
                g = _full(shape, g, dtype=dt)
            if g.dtype is not dt or g._data.shape != shape:
                g = _fix_grad(node, len(fixed), g, meta)
        fixed.append(g)
    if state.anomaly:
        anomaly_check(node, fixed)
    if node._hooks:
        for h in list(node._hooks):
            r = h(tuple(fixed), grads)
            if r is not None:
                fixed = list(r)
    return fixed


def _full(shape, value, dtype):
    from ..ops.creation import full
    return full(shape, value, dtype=dtype)


def _ones_like(t):
    global _ones_like
    from ..ops.creation import ones_like as _ones_like   # bound once (imports run one way)
    return _ones_like(t)


def _make_grads(outputs, grad_outputs, create_graph):
    out = []
    for i, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if t._requires_grad and t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                   f"outputs but got {t.dtype}")
            if t._data.ndim == 0 and not state.modes and type(t._data) is not MetaArray:
                # the usual `loss.backward()`: a 0-d one, made directly (ones_like's result;
                # a meta loss gets ones_like's meta one)
                g = Tensor._make(np.array(1, t.dtype.np), t.dtype)
                g._inference = state.inference
            else:
                g = _ones_like(t)
        elif not isinstance(g, Tensor):
            from ..ops.creation import full_like
            g = full_like(t, g)
        else:
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape} and output[{i}] has a shape of {t.shape}.")
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate gradients of `tensors` into the leaves' ``.grad`` (``loss.backward()``)."""
    if isinstance(tensors, Tensor):
        tensors = (tensors,)
    tensors = tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        import warnings
        warnings.warn("Using backward() with create_graph=True will create a reference cycle "
                      "between the parameter and its gradient which can cause a memory leak. We "
                      "recommend using autograd.grad when creating the graph to avoid this. If "
                      "you have to use this function, make sure to reset the .grad fields of "
                      "your parameters to None after use to break the cycle and avoid the leak.",
                      UserWarning, stacklevel=3)
    grads = _make_grads(tensors, grad_tensors, create_graph)
    if inputs is not None:
        if isinstance(inputs, Tensor):
            inputs = (inputs,)
        inputs = tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        got = run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs,
                           accumulate=False)
        for t, g in zip(inputs, got):
            if g is None:
                continue
            if t.grad_fn is None:
                from .graph import edge_of as _e
                _accumulate(_e(t)[0], g, False, create_graph)
            else:
                t._grad = g.detach() if t._grad is None else t._grad + g.detach()
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of `outputs` with respect to `inputs`, returned (not accumulated)."""
    if isinstance(outputs, Tensor):
        outputs = (outputs,)
    outputs = tuple(outputs)
    single = isinstance(inputs, Tensor)
    inputs = (inputs,) if single else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    gos = _make_grads(outputs, grad_outputs, create_graph)
    got = run_backward(outputs, gos, retain_graph, create_graph, inputs=inputs,
                       accumulate=False)
    result = []
    for k, (t, g) in enumerate(zip(inputs, got)):
        if g is None:
            if materialize_grads:
                from ..ops.creation import zeros_like
                # like PyTorch: with create_graph the zeros are a leaf that requires grad
                g = zeros_like(t, requires_grad=bool(create_graph))
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        elif not create_graph:
            fw = getattr(g, "_fw", None)
            g = g.detach()
            if fw:      # forward AD's tangents stay (forward_ad.py), as in PyTorch
                g._fw = fw
        result.append(g)
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """``is_grads_batched=True``: the first dim of every grad_output indexes independent
    vector-Jacobian products; results are stacked along a new first dim."""
    from ..ops.joining import stack
    n = grad_outputs[0].shape[0]
    rows = [grad(outputs, inputs, tuple(g[i] for g in grad_outputs), retain_graph=True,
                 create_graph=create_graph, allow_unused=allow_unused,
                 materialize_grads=materialize_grads) for i in range(n)]
    if not retain_graph:
        for o in outputs:
            if o.grad_fn is not None:
                _release_graph(o.grad_fn)
    return tuple(None if any(r[k] is None for r in rows) else stack([r[k] for r in rows])
                 for k in range(len(inputs)))


def _release_graph(root):
    seen, stack_ = {root}, [root]
    while stack_:
        node = stack_.pop()
        node.release()
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack_.append(nxt)

