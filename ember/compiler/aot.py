"""Joint forward/backward: split one traced graph into a forward and a backward graph, and
wrap the pair as an autograd Function (AOTAutograd's idea, on ember's own engine).

While tracing, the tracer runs the autograd engine over the traced outputs (the derivative
formulas are ember ops, so they are recorded too, as phase "bwd"). `partition` cuts the
joint graph: the forward graph returns the user's outputs plus every forward value the
backward reads (the saved activations); the backward graph takes those and the output
gradients (tangents) and returns the inputs' gradients. Forward values that are cheap
pointwise functions of other saved values are recomputed in the backward instead of saved.
"""
from ..core.tensor import Tensor
from ..autograd.function import Function
from ..ops.creation import zeros
from ..ops.registry import VIEW
from ..autograd.grad_mode import no_grad
from ..autograd import engine
from .graph import Graph, map_nodes
from .tracer import tensors_in, BackwardNotCaptured

def _cheap(n, mutated=frozenset()):
    """Cheap enough to recompute in the backward rather than keep alive between the passes
    (the op's `recompute` flag: pointwise ops and views)."""
    return n.kind == "call" and not n.inplace and n.op is not None and n.op.recompute \
        and id(n) not in mutated


def _aliases(n):
    """A getitem or a view: its value shares memory with its first input."""
    return n.kind == "getitem" or (n.kind == "call" and n.op is not None and
                                   n.op.kind == VIEW)


def mutated_nodes(nodes):
    """ids of the nodes whose values an in-place op (or opaque call) changes later, with the
    views they share memory with: such values must not be recomputed from their inputs."""
    out = set()
    for n in nodes:
        if n.kind == "call" and n.inplace:
            stack = list(n.inputs())
            while stack:
                m = stack.pop()
                if id(m) in out:
                    continue
                out.add(id(m))
                if _aliases(m):
                    stack.extend(m.inputs()[:1])
    changed = True
    while changed:          # views made from a mutated value see the change too
        changed = False
        for n in nodes:
            if id(n) not in out and _aliases(n) and n.inputs() and \
                    id(n.inputs()[0]) in out:
                out.add(id(n))
                changed = True
    return out


def _place_before_use(recomputed, bwd):
    """The backward's nodes with each recomputed node placed just before its first use, so
    the fusion pass can put it in one kernel with the gradient ops that read it."""
    pending = {id(n): n for n in recomputed}
    out = []

    def emit(n):
        for i in n.inputs():
            if id(i) in pending:
                del pending[id(i)]
                emit(i)
        out.append(n)
    for n in bwd:
        emit(n)
    return out


def _cut(saved, fwd_ids, mutated, max_chain=8):
    """Where several saved values are cheap pointwise functions of one other value (gelu
    saves x*0.5 and 1+erf(x/sqrt 2), both functions of x), save that value instead and
    recompute them in the backward: fewer tensors kept alive (a local min-cut).
    Returns (saved, recomputed)."""
    groups = {}
    for s in saved:
        if not _cheap(s, mutated):
            continue
        chain, front, stack, seen = [], {}, [s], set()
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            if _cheap(n, mutated) and id(n) in fwd_ids and len(chain) < max_chain:
                chain.append(n)
                stack.extend(i for i in n.inputs() if i.kind != "lifted")
            else:
                front[id(n)] = n
        if len(front) == 1:
            (f,) = front.values()
            groups.setdefault(id(f), (f, []))[1].append((s, chain))
    saved_ids = {id(n) for n in saved}
    drop, add, recompute = set(), [], {}
    for f, items in groups.values():
        if len(items) >= 2 or (id(f) in saved_ids and items):
            for s, chain in items:
                drop.add(id(s))
                for n in chain:
                    recompute[id(n)] = n
            if id(f) not in saved_ids:
                add.append(f)
                saved_ids.add(id(f))
    if not drop:
        return saved, []
    return [n for n in saved if id(n) not in drop] + add, list(recompute.values())


def _choose_recompute(saved, fwd_ids, max_chain=8, mutated=frozenset()):
    """Saved values to recompute in the backward instead: a cheap pointwise/view value whose
    chain of cheap producers reaches only values that stay saved (or lifted tensors) is
    dropped from the saved set, and the chain is recomputed (a greedy min-cut)."""
    keep = {id(n): n for n in saved}
    chosen = {}
    for s in reversed(saved):
        if not _cheap(s, mutated):
            continue
        chain, ok, stack, seen = [], True, [s], set()
        while stack and ok:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            chain.append(n)
            for i in n.inputs():
                if i.kind == "lifted" or (id(i) in keep and i is not s) or id(i) in chosen:
                    continue
                if id(i) in fwd_ids and _cheap(i, mutated) and len(chain) < max_chain:
                    stack.append(i)
                else:
                    ok = False
                    break
        if ok:
            del keep[id(s)]
            for n in chain:
                chosen[id(n)] = n
    return list(chosen.values())


def extract(nodes, inputs, output, name_map=None):
    """A new Graph of `nodes` (in order) where the nodes in `inputs` become input nodes,
    lifted nodes referenced are copied, and `output` (a structure of nodes) is returned."""
    g = Graph()
    new = {}
    for i, n in enumerate(inputs):
        new[id(n)] = g.add("input", n.name, index=i, meta=n.meta)
    n_lifted = 0

    def remap(x):
        nonlocal n_lifted
        m = new.get(id(x))
        if m is None:
            assert x.kind == "lifted", f"{x.name} is read before it is made"
            m = g.add("lifted", x.name, target=x.target, index=n_lifted, meta=x.meta)
            n_lifted += 1
            new[id(x)] = m
        return m

    for n in nodes:
        if id(n) in new:
            continue
        if n.kind == "lifted":
            remap(n)
            continue
        c = g.add(n.kind, n.name, target=n.target, index=n.index, meta=n.meta,
                  source=n.source, phase=n.phase, opname=n.opname, method=n.method,
                  inplace=n.inplace)
        c.args = map_nodes(n.args, remap)
        c.kwargs = map_nodes(n.kwargs, remap)
        new[id(n)] = c
    g.add("output", "output", args=(map_nodes(output, remap),))
    # lifted nodes first, so the printed function lists them as parameters
    g.nodes = [n for n in g.nodes if n.kind in ("input", "lifted")] + \
        [n for n in g.nodes if n.kind not in ("input", "lifted")]
    return g


def partition(joint, n_user_inputs, flat_outputs, tangents, grads):
    """Split `joint` into (forward graph, backward graph, saved nodes, recomputed names).
    `flat_outputs`: the user's output nodes; `tangents`: the input nodes of the output
    gradients; `grads`: per differentiable input, its gradient node (or None)."""
    fwd = [n for n in joint.nodes if n.phase == "fwd" and n.kind != "output"]
    bwd = [n for n in joint.nodes if n.phase == "bwd" and n.kind not in ("output", "input")]
    fwd_ids = {id(n) for n in fwd}
    tangent_ids = {id(t) for t in tangents}

    def needed_from_fwd(nodes):
        out, seen = [], set()
        for n in nodes:
            for i in n.inputs():
                if id(i) in fwd_ids and i.kind != "lifted" and id(i) not in seen:
                    seen.add(id(i))
                    out.append(i)
        for g in grads:
            if g is not None and id(g) in fwd_ids and g.kind != "lifted" and id(g) not in seen:
                seen.add(id(g))
                out.append(g)
        return out

    saved = needed_from_fwd(bwd)
    mutated = mutated_nodes(fwd)
    # a value a matmul/conv (or any non-pointwise op) of the backward reads is materialised
    # anyway: keep it saved rather than recompute it outside a fused kernel
    for n in bwd:
        if n.kind == "call" and (n.op is None or not n.op.recompute or n.op.kind == VIEW):
            mutated |= {id(i) for i in n.inputs() if id(i) in fwd_ids}
    saved, recomputed = _cut(saved, fwd_ids, mutated)
    more = _choose_recompute(saved, fwd_ids, mutated=mutated)
    more_ids = {id(n) for n in more}
    saved = [n for n in saved if id(n) not in more_ids]
    recomputed += [n for n in more if n not in recomputed]
    # what the recomputed nodes read must be saved (it is: the anchors were saved already)
    order = {id(n): i for i, n in enumerate(joint.nodes)}
    recomputed.sort(key=lambda n: order[id(n)])
    bwd_nodes = _place_before_use(recomputed, bwd)
    fwd_graph = extract(fwd, [n for n in fwd if n.kind == "input"],
                        (tuple(flat_outputs), tuple(saved)))
    bwd_graph = extract(bwd_nodes, saved + list(tangents), tuple(grads))
    assert not tangent_ids & fwd_ids
    return fwd_graph, bwd_graph, saved, [n.name for n in recomputed]


def drop_unused_saved(fwd_graph, bwd_graph, n_saved):
    """Saved values the backward no longer reads after its passes (DCE removed their last
    reader) are neither returned by the forward nor taken by the backward."""
    bwd_graph.count_users()
    inputs = bwd_graph.inputs()
    unused = {i for i, n in enumerate(inputs[:n_saved]) if n.users == 0}
    if not unused:
        return
    bwd_graph.nodes = [n for n in bwd_graph.nodes
                       if not (n.kind == "input" and n.index in unused)]
    for k, n in enumerate(bwd_graph.inputs()):
        n.index = k
    out = fwd_graph.output()
    outs, saved = out.args[0]
    out.args = ((outs, tuple(x for i, x in enumerate(saved) if i not in unused)),)


_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the graph "
          "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True "
          "if you need to backward through the graph a second time or if you need to access "
          "saved tensors after calling backward.")


def make_autograd_runner(fwd_run, bwd_run, n_inputs, diff_positions, lifted_diff,
                         out_meta, name="CompiledFunction", private_saved=False):
    """A function ``run(flat_inputs, syms) -> flat_outputs`` whose outputs are linked to one
    autograd node running `bwd_run`. `diff_positions`: indices of the flat inputs whose
    gradients the backward returns (in order), then `lifted_diff` tensors (parameters).
    `private_saved` (mode="reduce-overhead": the forward's saved values are fresh copies
    nobody else holds): those skip autograd's saved-tensor wrappers and version checks; the
    ones that are also outputs or inputs keep them."""
    n_diff_inputs = len(diff_positions)

    class CompiledFunction(Function):
        @staticmethod
        def forward(ctx, syms, *tensors):
            inputs = tensors[:n_inputs]
            outs, saved = fwd_run(list(inputs), syms)
            if private_saved:
                # (a list the replay plan handed over, its Lease, is kept as it is: the plan
                # may still swap its entries for copies before the backward runs)
                shared = {id(t) for t in outs} | {id(t) for t in tensors}
                priv = saved if isinstance(saved, list) else list(saved)
                saved = [t for t in priv if id(t) in shared]
                for i, t in enumerate(priv):
                    if id(t) in shared:
                        priv[i] = None
                ctx._private = priv
            ctx.save_for_backward(*saved)
            ctx.syms = syms
            ctx.out_shapes = [o.shape if isinstance(o, Tensor) else () for o in outs]
            nondiff = [o for o, (dt, rg) in zip(outs, out_meta)
                       if isinstance(o, Tensor) and not rg]
            if nondiff:
                ctx.mark_non_differentiable(*nondiff)
            return tuple(outs)

        @staticmethod
        def backward(ctx, *grad_outputs):
            tangents = []
            for g, (dt, rg), shape in zip(grad_outputs, out_meta, ctx.out_shapes):
                if rg:
                    tangents.append(g if g is not None else zeros(shape, dtype=dt))
            saved = list(ctx.saved_tensors)
            if private_saved:
                if ctx._private is None:
                    raise RuntimeError(_FREED)
                it = iter(saved)
                saved = [t if t is not None else next(it) for t in ctx._private]
            grads = bwd_run(saved + tangents, ctx.syms)
            result = [None] * (1 + n_inputs + len(lifted_diff))
            for k, g in enumerate(grads):
                pos = diff_positions[k] if k < n_diff_inputs else n_inputs + k - n_diff_inputs
                result[1 + pos] = g
            return tuple(result)

    CompiledFunction.__name__ = name
    if private_saved:
        node_cls = CompiledFunction._backward_cls
        base_release = node_cls.release

        def release(ctx):
            base_release(ctx)
            ctx._private = None          # freed with the rest (retain_graph=False)
        node_cls.release = release

    def run(inputs, syms=()):
        return CompiledFunction.apply(syms, *inputs, *lifted_diff)
    return run


def _ones_like_detached(t):
    from ..ops.creation import ones_like
    with no_grad():
        return ones_like(t)


def trace_backward(tracer, result, flat):
    """Run the engine's backward from the differentiable outputs (ones as their gradients,
    each an input node "tangent_i") while tracing: the joint record, None when no output
    requires grad, or {"failed": why} when the backward cannot be captured."""
    outs = tensors_in(result)
    diff_outs = [t for t in outs if t._requires_grad]
    if not diff_outs:
        return None
    for n in tracer.graph.nodes:
        if n.kind == "call" and n.opname.startswith("ember.compiler.disabled") and any(
                i.meta is not None and i.meta[3] for i in n.inputs()):
            # its backward runs through ops the trace did not see (they ran eagerly)
            return {"failed": f"{n.opname} takes tensors that require grad"}
    input_nodes = tracer.graph.inputs()
    diff_ins = [t for _, t in flat if t._requires_grad and tracer.proxies.get(id(t))
                in input_nodes]
    lifted_diff = [n.target for n in tracer.graph.lifted() if n.target._requires_grad]
    tracer.phase = "bwd"
    tangents, tangent_nodes = [], []
    for i, t in enumerate(diff_outs):
        g = _ones_like_detached(t)
        node = tracer.graph.add("input", f"tangent_{i}", index=None, phase="bwd")
        tracer._bind(g, node)
        tangents.append(g)
        tangent_nodes.append(node)
    leaves = diff_ins + lifted_diff
    try:
        grads = engine.run_backward(diff_outs, tangents, True, False, inputs=leaves,
                                    accumulate=False, allow_unused=True) if leaves else []
        grad_nodes = [tracer.node_of(g) if g is not None else None for g in grads]
    except Exception as e:
        # drop what the backward recorded; the forward replays with eager autograd (an
        # error the backward raises, a stale saved tensor say, then reaches the user
        # from their own backward call, as in eager mode)
        tracer.graph.nodes = [n for n in tracer.graph.nodes if n.phase == "fwd"]
        tracer.phase = "fwd"
        return {"failed": str(e) if isinstance(e, BackwardNotCaptured) else
                f"{type(e).__name__}: {e}"}
    tracer.phase = "fwd"
    return dict(diff_outs=diff_outs, diff_ins=diff_ins, lifted_diff=lifted_diff,
                tangent_nodes=tangent_nodes, grad_nodes=grad_nodes)
