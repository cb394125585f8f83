"""One op, one definition: what the compiler, autograd and amp ask of an op they read from its
OpDef, and no module outside ember/ops/ keeps a table of op names of its own.

The scan below parses every module outside ember/ops/ and flags any set, list, tuple or dict
literal holding three or more registered op names: such a table says something about ops
that belongs on their OpDefs. KNOWN lists the tables that remain, each with the reason; it may
only shrink (a listed table that is gone fails the test, so the list stays true).
"""
import ast
import os
import types

import pytest

import ember
from ember.compiler import aot, buffers, fusion, passes
from ember.compiler.graph import Graph
from ember.ops import registry
from ember.ops.registry import OpDef, op_for

EMBER = os.path.dirname(ember.__file__)

# (file relative to ember/, enclosing definition or assigned name): why it is still there
KNOWN = {
    ("nn/functional_embedding.py", "embedding_bag"): "embedding_bag's mode names, not ops",
    ("nn/init.py", "linear_fns"): "calculate_gain's nonlinearity names (its API), not ops",
}


def _tables(names):
    """{(file, context): line} of literals with >= 3 registered op names."""
    found = {}
    for dirpath, _, files in os.walk(EMBER):
        for f in files:
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, EMBER).replace(os.sep, "/")
            if not f.endswith(".py") or rel.startswith("ops/"):
                continue
            tree = ast.parse(open(path).read())
            _scan(tree, rel, None, names, found)
    return found


def _scan(node, rel, context, names, found):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        context = node.name
    elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        context = node.targets[0].id
        if context == "__all__":   # a module's export list names functions, it says nothing
            return                 # about them
    if isinstance(node, (ast.Set, ast.List, ast.Tuple, ast.Dict)):
        elts = node.keys if isinstance(node, ast.Dict) else node.elts
        hits = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in names]
        if len(hits) >= 3:
            found.setdefault((rel, context), node.lineno)
    for child in ast.iter_child_nodes(node):
        _scan(child, rel, context, names, found)


def test_no_op_name_tables_outside_ops():
    names = set(registry.BY_NAME)
    found = _tables(names)
    new = {k: v for k, v in found.items() if k not in KNOWN}
    assert not new, "op-name tables outside ember/ops/ (put the fact on the OpDef): " + \
        ", ".join(f"{f}:{line} in {ctx}" for (f, ctx), line in new.items())
    gone = [k for k in KNOWN if k not in found]
    assert not gone, f"KNOWN lists tables that no longer exist (remove them): {gone}"


def test_scanner_finds_a_table(tmp_path):
    tree = ast.parse("RANDOM = {'rand', 'randn', 'bernoulli'}\nOK = ('a', 'b', 'rand')\n")
    found = {}
    _scan(tree, "x.py", None, set(registry.BY_NAME), found)
    assert list(found) == [("x.py", "RANDOM")]


def _call(graph, opname, *args, inplace=False):
    return graph.add("call", opname.split(".")[-1], target=lambda *a: None, args=args,
                     opname=opname, inplace=inplace)


def test_nodes_resolve_their_opdef_by_recorded_name():
    g = Graph()
    x = g.add("input", "x", index=0)
    assert _call(g, "ember.mul", x, x).op is op_for("mul")
    assert _call(g, "view", x).op.kind == registry.VIEW
    assert _call(g, "ember.compiler.disabled.f", x).op is None


def test_purity_is_the_opdefs_impure_flag():
    g = Graph()
    x = g.add("input", "x", index=0)
    assert passes._pure(_call(g, "ember.add", x, x))
    assert not passes._pure(_call(g, "ember.rand", 3))            # RANDOM: impure
    assert not passes._pure(_call(g, "ember.compiler.disabled.f", x))   # unknown: impure
    assert not passes._pure(_call(g, "add_", x, x, inplace=True))


def test_dce_keeps_an_unused_random_call_and_drops_an_unused_pure_one():
    g = Graph()
    x = g.add("input", "x", index=0)
    _call(g, "ember.rand", 3)
    _call(g, "ember.exp", x)
    g.add("output", "output", args=(x,))
    assert passes.dce(g) == 1
    assert [n.opname for n in g.calls()] == ["ember.rand"]


def test_recompute_aliasing_and_pooling_read_the_opdef():
    g = Graph()
    x = g.add("input", "x", index=0)
    mul, view, mm = _call(g, "ember.mul", x, x), _call(g, "view", x), _call(g, "ember.mm", x, x)
    assert aot._cheap(mul) and aot._cheap(view) and not aot._cheap(mm)
    assert aot._aliases(view) and not aot._aliases(mul)
    assert op_for("mm").fresh_result and not op_for("view").fresh_result
    # a fake op that declares itself expensive is not recomputed, whatever its kind
    op = OpDef("fake_pointwise", registry.POINTWISE, recompute=False)
    assert not op.recompute and op.fresh_result and not op.impure
    assert buffers.__doc__ and "fresh_result" in buffers.__doc__


def test_fusion_reads_the_lowering():
    g = Graph()
    x = g.add("input", "x", index=0)
    x.meta = ((4, 4), ember.float32, (16, 4), False)
    n = _call(g, "ember.exp", x)
    n.meta = x.meta
    assert fusion.classify(n) == ("pointwise", None)
    m = _call(g, "ember.atan2", x, x)      # registered, but no lowering
    m.meta = x.meta
    kind, why = fusion.classify(m)
    assert kind is None and "lowering" in why


@pytest.mark.parametrize("name", sorted(n for n, o in registry.OPS.items()
                                         if o.lower is not None and o.lower.c is not None))
def test_every_c_lowering_formats(name):
    from ember.compiler.codegen_c import op_to_c
    op = registry.OPS[name]
    nargs = len(op.inputs)
    for dt in ("float32", "float64"):
        code = op_to_c(op.lower.prim, "bool" if op.lower.compare else dt, dt,
                       [f"x{i}" for i in range(nargs)], tuple(("load", i) for i in range(nargs)))
        assert "x0" in code and "{" not in code


def test_scalars_saved_as_tensors_is_read_from_the_opdef():
    assert op_for("mul").scalars_as_tensors and op_for("div").scalars_as_tensors
    assert not op_for("add").scalars_as_tensors
    y = (ember.ones(2, requires_grad=True) * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def _init_fields(cls):
    """The attributes `cls.__init__` sets (``self.x = ...``)."""
    import inspect
    import textwrap
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    return {t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == "self"}


def _unread(fields):
    """The names of `fields` that no module of ember/ reads as ``<expr>.field`` (reads
    through ``self`` do not count: a constructor setting a field is not a reader)."""
    read = set()
    for root, _, files in os.walk(EMBER):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(root, f)) as fh:
                    tree = ast.parse(fh.read())
                read |= {n.attr for n in ast.walk(tree)
                         if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
                         and not (isinstance(n.value, ast.Name) and n.value.id == "self")}
    return sorted(set(fields) - read)


def test_every_opdef_field_is_read_somewhere():
    """Each field an OpDef (or its backward template) declares is read by some module: a
    field nobody reads is decorative, which the registry must not have."""
    from ember.autograd.derivative import Derivative
    fields = _init_fields(OpDef) | _init_fields(Derivative)
    assert {"kind", "grads", "lower", "fused", "decomp", "meta"} <= fields
    assert not _unread(fields), f"OpDef fields no module reads: {_unread(fields)}"


def test_the_field_scan_sees_an_unread_field():
    assert _unread({"kind", "no_such_field_anywhere"}) == ["no_such_field_anywhere"]


def test_every_opdef_is_registered():
    """One op, one definition: every OpDef object alive after import is the registry's
    record of its op (a backward template that is not an op is an autograd Derivative)."""
    import gc
    registered = {id(op) for op in registry.OPS.values()}
    gc.collect()      # (a test's own OpDef, freed but held in a cycle, is not a stray)
    stray = sorted(o.name for o in gc.get_objects()
                   if isinstance(o, OpDef) and id(o) not in registered)
    assert not stray, f"OpDefs that are not in the registry: {stray}"
    # and each template names a registered op, or only itself (an internal one)
    from ember.autograd.derivative import BY_OP
    for of, templates in BY_OP.items():
        for d in templates:
            assert d.of == of and (of in registry.OPS or of == d.name), d


# ---- the facts that decide torch's exception for bad input are OpDef fields ----
def _raises(input, value):          # an op's function that fails on every call
    raise RuntimeError("the op's own error")


def _dim_op(input, dim=0):          # (an int parameter with an int default)
    raise RuntimeError("the op's own error")


_X = ember.ones(2)
# field: (its value, the function, the call's args, what the op raised), where the field
# changes dispatch_args.argument_error's answer (a declared fact: the op's own error stands)
_FACTS = {
    "uint64_scalars": ({"value"}, _raises, (_X, 2 ** 63), RuntimeError("own")),
    "own_range_check": ({"value"}, _raises, (_X, 2 ** 63), RuntimeError("own")),
    "own_type_check": (True, _raises, ("abc", 1), AttributeError("'str' object has no "
                                                                 "attribute 'dim'")),
    "torch_python": (("dim", (0,)), _raises, ("abc", 1), AttributeError(
        "'str' object has no attribute 'dim'")),
    "bool_overload": (True, _dim_op, (_X, True), RuntimeError("own")),
}


@pytest.mark.parametrize("field", sorted(_FACTS))
def test_bad_input_facts_are_read_from_the_op(field):
    """argument_error reads each fact from the op object it is given (its OpDef, or for a
    seam named by a string, the function's attribute), and from no table of op names."""
    from ember import dispatch_args
    value, fn, args, exc = _FACTS[field]
    plain = dispatch_args.argument_error(OpDef("fake_fact", registry.EXTERN), fn, args, {}, exc)
    declared = dispatch_args.argument_error(OpDef("fake_fact", registry.EXTERN, **{field: value}),
                                            fn, args, {}, exc)
    assert plain is not None and declared is None or (
        field == "torch_python" and type(declared) is AttributeError
        and type(plain) is TypeError), (field, plain, declared)
    assert field in _init_fields(OpDef) and f"``{field}``" in OpDef.__doc__
    if field in ("uint64_scalars", "own_range_check", "bool_overload"):
        # a method with no OpDef (fill_) declares it on its function, which its seam names
        method = types.FunctionType(fn.__code__, fn.__globals__, "method", fn.__defaults__)
        bare = dispatch_args.argument_error("fake_", method, args, {}, exc)
        setattr(method, field, value)
        assert bare is not None and dispatch_args.argument_error(
            "fake_", method, args, {}, exc) is None, (field, bare)


def test_dispatch_args_keeps_no_op_name_table():
    """The old tables (TORCH_PYTHON, UINT64_SCALARS...) were filled from ember/ops at import,
    which the source scan above cannot see: none of dispatch_args's globals holds op names."""
    from ember import dispatch_args
    names = set(registry.BY_NAME)
    tables = [k for k, v in vars(dispatch_args).items() if not k.startswith("__")
              and isinstance(v, (dict, set, frozenset))
              and len([x for x in v if isinstance(x, str) and x in names]) >= 3]
    assert not tables, tables
