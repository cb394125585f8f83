"""Pytrees for the function transforms: nested tuples, lists, dicts (and namedtuples) of leaves.

torch.func accepts and returns such containers; the transforms flatten them to a list of
leaves plus a spec, work on the leaves, and rebuild the container. Anything that is not a
tuple, list or dict is a leaf (tensors, numbers, None).

    >>> leaves, spec = tree_flatten({"a": 1, "b": (2, [3])})
    >>> leaves
    [1, 2, 3]
    >>> tree_unflatten([10, 20, 30], spec)
    {'a': 10, 'b': (20, [30])}
"""

LEAF = None     # the spec of a leaf


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class TreeSpec:
    """The structure of a pytree: its container type, keys (for dicts) and children's specs."""
    __slots__ = ("kind", "keys", "children", "num_leaves")

    def __init__(self, kind, keys, children):
        self.kind, self.keys, self.children = kind, keys, children
        self.num_leaves = sum(1 if c is LEAF else c.num_leaves for c in children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.kind == other.kind and
                self.keys == other.keys and self.children == other.children)

    def __repr__(self):
        inner = ", ".join("*" if c is LEAF else repr(c) for c in self.children)
        if self.kind is dict:
            inner = ", ".join(f"{k!r}: {'*' if c is LEAF else repr(c)}"
                              for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        if self.kind is list:
            return f"[{inner}]"
        if self.kind is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        return f"{self.kind.__name__}({inner})"


def tree_flatten(tree):
    """(list of leaves, spec); the spec of a bare leaf is LEAF (None)."""
    leaves = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def _flatten(tree, leaves):
    if isinstance(tree, dict):
        keys = list(tree)
        return TreeSpec(dict, keys, [_flatten(tree[k], leaves) for k in keys])
    if isinstance(tree, (tuple, list)):
        kind = type(tree) if _is_namedtuple(tree) else (list if isinstance(tree, list)
                                                        else tuple)
        return TreeSpec(kind, None, [_flatten(c, leaves) for c in tree])
    leaves.append(tree)
    return LEAF


def tree_unflatten(leaves, spec):
    """Rebuild a pytree of structure `spec` from its leaves (in flatten order)."""
    it = iter(leaves)
    out = _unflatten(it, spec)
    return out


def _unflatten(it, spec):
    if spec is LEAF:
        return next(it)
    children = [_unflatten(it, c) for c in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.keys, children))
    if spec.kind is list:
        return children
    if spec.kind is tuple:
        return tuple(children)
    return spec.kind(*children)       # a namedtuple


def tree_map(fn, tree):
    """The same structure with `fn` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def spec_str(spec):
    """The spec as torch prints it in error messages (`*` for a leaf)."""
    return "*" if spec is LEAF else repr(spec)


def treespec_repr(spec):
    """The spec as torch's TreeSpec prints it: ``TreeSpec(tuple, None, [*, *])``."""
    if spec is LEAF:
        return "*"
    kind = spec.kind.__name__
    keys = spec.keys if spec.kind is dict else None
    inner = ", ".join(treespec_repr(c) for c in spec.children)
    return f"TreeSpec({kind}, {keys}, [{inner}])"
