"""functional_call and stack_module_state: a module run with other tensors as its state.

``functional_call(module, params, args)`` calls the module with some of its parameters and
buffers replaced by the given tensors, for that call only: the module's own tensors are put
back afterwards, also when the call raises. Together with ``vmap`` and
``stack_module_state`` it runs an ensemble of models as one batched model:

    >>> import copy
    >>> models = [nn.Linear(3, 2) for _ in range(8)]
    >>> params, buffers = stack_module_state(models)      # each tensor (8, ...)
    >>> base = copy.deepcopy(models[0])
    >>> out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)),
    ...            in_dims=(0, 0, None))(params, buffers, x)      # (8, batch, 2)

ember.func sits below ember.nn in the import layering (tests/test_layering.py), so modules
are handled by duck typing: ``named_parameters``/``named_buffers``/``named_modules`` and the
``_parameters``/``_buffers`` dicts of each submodule. As in PyTorch, a replaced entry holds
the given tensor itself (a plain tensor, not a Parameter) while the call runs.
"""
from ..core.tensor import Tensor


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call `module` with the parameters and buffers named in `parameter_and_buffer_dicts`
    (a dict of name -> tensor, or a list/tuple of such dicts with disjoint keys) standing in
    for its own, for this call only.

    `args` is a tuple of positional arguments (anything else is the single argument),
    `kwargs` a dict. With ``tie_weights=True`` a tensor given for one of several names that
    share a tensor in the module (tied weights) replaces all of them. With ``strict=True``
    every parameter and buffer must be given and no other name.

    >>> functional_call(nn.Linear(3, 2), {"weight": w, "bias": b}, (x,))   # x @ w.T + b
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        values = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        values = {}
        seen = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a "
                                 f"list/tuple of dicts, but got {type(parameter_and_buffer_dicts)}")
            for k in d:
                seen[k] = seen.get(k, 0) + 1
            values.update(d)
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if kwargs is None:
        kwargs = {}
    with _reparametrized(module, values, tie_weights, strict):
        return module(*args, **kwargs)


class _reparametrized:
    """Puts `values` into the module's parameter/buffer slots on enter, restores on exit."""

    def __init__(self, module, values, tie_weights, strict):
        names = _state_names(module)          # every name, duplicates (tied) included
        if tie_weights:                       # (a value for one tied name counts for all)
            values = _tie(names, values)
        if strict:
            missing = [n for n in names if n not in values]
            unexpected = [n for n in values if n not in names]
            if missing or unexpected:
                lines = []
                if missing:
                    lines.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
                if unexpected:
                    lines.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected)
                                 + ".")
                raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:"
                                   "\n\t" + "\n\t".join(lines))
        self.module, self.values = module, values
        self.saved = []

    def __enter__(self):
        try:
            for name, value in self.values.items():
                owner, leaf = _owner(self.module, name)
                self.saved.append((owner, leaf, _swap(owner, leaf, value)))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        while self.saved:
            owner, leaf, old = self.saved.pop()
            _swap(owner, leaf, old)
        return False


_ABSENT = object()


def _state_names(module):
    """{name: tensor} of every parameter and buffer, each tied name listed."""
    names = {}
    for n, p in module.named_parameters(remove_duplicate=False):
        names[n] = p
    for n, b in module.named_buffers(remove_duplicate=False):
        names[n] = b
    return names


def _tie(names, values):
    """With tied weights, a value given for one name of a tie group goes to all of them."""
    groups = {}
    for n, t in names.items():
        if t is not None:
            groups.setdefault(id(t), []).append(n)
    out = dict(values)
    for group in groups.values():
        if len(group) < 2:
            continue
        given = [n for n in group if n in values]
        if len(given) > 1 and any(values[n] is not values[given[0]] for n in given[1:]):
            raise ValueError(f"functional_call got multiple values for keys {given}, which "
                             "are tied. Consider using tie_weights=False")
        if given:
            for n in group:
                out[n] = values[given[0]]
    return out


def _owner(module, name):
    """(the submodule holding `name`, the last component of the name)."""
    path, _, leaf = name.rpartition(".")
    owner = module
    if path:
        for part in path.split("."):
            sub = getattr(owner, "_modules", {}).get(part)
            if sub is None:
                raise AttributeError(f"{type(owner).__name__} has no attribute `{part}`")
            owner = sub
    return owner, leaf


def _swap(owner, leaf, value):
    """Set `owner`'s parameter/buffer `leaf` to `value` (a plain attribute when it is
    neither); return what was there (_ABSENT when nothing) so it can be put back."""
    for table in ("_parameters", "_buffers"):
        d = owner.__dict__.get(table)
        if d is not None and leaf in d:
            old = d[leaf]
            if value is _ABSENT:
                del d[leaf]
            else:
                d[leaf] = value
            return old
    old = owner.__dict__.get(leaf, _ABSENT)
    if value is _ABSENT:
        owner.__dict__.pop(leaf, None)
    else:
        owner.__dict__[leaf] = value
    return old


def stack_module_state(models):
    """The parameters and buffers of same-shaped `models`, stacked along a new leading dim:
    ``(params, buffers)``, two dicts of name -> tensor. The stacked parameters are new leaves
    (requiring grad like the models' own), detached from the models.

    >>> params, buffers = stack_module_state([nn.Linear(3, 2) for _ in range(4)])
    >>> params["weight"].shape
    ember.Size([4, 2, 3])
    """
    from ..ops.joining import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    first = models[0]
    all_params = [dict(m.named_parameters()) for m in models]
    params = {}
    for name, p in first.named_parameters():
        group = [ps[name] for ps in all_params]
        if any(q.requires_grad != p.requires_grad for q in group):
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               ".requires_grad")
        params[name] = stack([q.detach() for q in group]).requires_grad_(p.requires_grad)
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {name: stack([bs[name].detach() for bs in all_buffers])
               for name, b in first.named_buffers() if isinstance(b, Tensor)}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every batch-norm module in `root` use batch statistics only, in place (no running
    mean/var, ``track_running_stats=False``), so that ``vmap`` over a model does not write
    one running statistic from many samples; returns `root`.

    >>> replace_all_batch_norm_modules_(model) is model
    True
    """
    for m in root.modules():
        # (duck-typed: ember.nn sits above ember.func; a batch norm is what has these three)
        if all(hasattr(m, a) for a in ("running_mean", "running_var", "track_running_stats")):
            m.running_mean = None
            m.running_var = None
            if hasattr(m, "num_batches_tracked"):
                m.num_batches_tracked = None
            m.track_running_stats = False
    return root
