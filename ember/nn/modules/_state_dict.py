"""Module.state_dict / load_state_dict: saving and loading parameters and persistent
buffers by dotted name (a mixin of Module).

    sd = net.state_dict()              # OrderedDict: 'fc.weight' -> tensor, ...
    other.load_state_dict(sd)          # <All keys matched successfully>
"""
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import autograd
from ...core.tensor import Tensor
from ..parameter import Parameter, is_lazy
from ._hooks import RemovableHandle


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDictMixin:
    """state_dict, load_state_dict and their hooks."""

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called.")

    def _has_extra_state(self):
        return type(self).get_extra_state is not StateDictMixin.get_extra_state

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state():
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of parameters and persistent buffers by dotted name (detached unless
        `keep_vars`).

        >>> list(nn.Linear(3, 2).state_dict())
        ['weight', 'bias']
        """
        if args:   # legacy positional form state_dict(destination, prefix, keep_vars)
            destination = args[0]
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, {})
            if res is not None:
                destination = res
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  'torch.Tensor or Tensor-like object from checkpoint but '
                                  f'received {type(value)}')
                continue
            if is_lazy(param):
                param.materialize(value.shape, dtype=value.dtype)
            elif value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model "
                                  f"is {param.shape}.")
                continue
            try:
                with autograd.no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            value = Parameter(value, requires_grad=param.requires_grad)
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                                  f'in the model are {param.size()} and whose dimensions in the '
                                  f'checkpoint are {value.size()}, an exception occurred : '
                                  f'{ex.args}.')
        extra = prefix + "_extra_state"
        if self._has_extra_state():
            if extra in state_dict:
                self.set_extra_state(state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        elif strict and extra in state_dict:
            unexpected_keys.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra:
                    head = key[len(prefix):].split(".", 1)
                    if (len(head) > 1 and head[0] not in self._modules) or \
                            (len(head) == 1 and head[0] not in local):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from `state_dict` (shapes must match). Returns
        ``(missing_keys, unexpected_keys)``; with `strict` either being non-empty raises.

        >>> net2.load_state_dict(net.state_dict())
        <All keys matched successfully>
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        state_dict = OrderedDict(state_dict)

        def load(module, local_state, prefix=""):
            module._load_from_state_dict(local_state, prefix, {}, True, missing, unexpected,
                                         errors, assign)
            for name, child in module._modules.items():
                if child is not None:
                    p = prefix + name + "."
                    load(child, {k: v for k, v in local_state.items() if k.startswith(p)}, p)
            result = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, result)

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict()`` saves."""
        h = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[h.id] = hook
        return h

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after saving; may return a
        new dict."""
        h = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = hook
        return h

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after ``load_state_dict`` loaded this module."""
        h = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[h.id] = hook
        return h
