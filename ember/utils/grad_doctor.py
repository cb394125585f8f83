"""The gradient doctor: watch a model's gradients and say in words what looks wrong.

    doctor = ember.utils.grad_doctor.watch(model, optimizer)
    for x, y in data:
        loss = loss_fn(model(x), y)
        optimizer.zero_grad(); loss.backward()
        print(doctor.report())            # or ember.utils.grad_doctor.report()
        optimizer.step()
    doctor.remove()

`report()` after `backward()` gives, per parameter, the gradient norm, mean |g|, the share of
exact zeros, NaN/inf counts and the update-to-weight ratio of the last optimizer step, then
the diagnoses of the seeds' table, each in words with what to try:

- exploding: NaN/inf gradients, or a total norm that grew step after step (`clip_grad_norm_`,
  `GradScaler` under float16 autocast, a lower learning rate);
- vanishing: mean |g| falling by orders of magnitude from the last weight layer to the first,
  with the activation modules between them named (Sigmoid/Tanh saturate);
- dead ReLU: units of a ReLU module whose output was 0 for every sample of the step;
- detached subgraph: a parameter of a module that ran in the forward pass but got no gradient,
  with the module path and, when the doctor saw it, the op that cut the graph (``.detach()``,
  ``.data``, ``.item()``, ``.tolist()``, ``.numpy()``, a NumPy call on a tensor) and its
  source line;
- bad initialisation (judged at the first report, on the weights as they started): a weight
  whose std is far (x5) from the fan-in rule for the activation after it (He:
  sqrt(2/fan_in) for ReLU, 5/3/sqrt(fan_in) for Tanh, 1/sqrt(fan_in) otherwise),
  or whose entries are all equal.

Cost: module forward hooks and a post-accumulate hook per parameter while watched, and a copy
of the weights (around each optimizer step, or at each report without an optimizer) for the
update ratios; during the model's forward a dispatch mode notes graph cuts (every op passes
it: a watched forward is slower); nothing at all after `remove()`. Activations are seen only
as modules (``nn.ReLU()``), not as functional calls (``F.relu``). A compiled function's replay
runs no module hooks: watch eager runs.
"""
import linecache
import math
import os
import sys

import numpy as np

from ..autograd.grad_mode import state
from ..core.tensor import Tensor, data_access_hooks
from ..nn.modules.activation import ReLU, ReLU6, LeakyReLU, Sigmoid, Tanh
from ..nn.modules.conv import _ConvNd
from ..nn.modules.linear import Linear

__all__ = ["watch", "report", "GradDoctor", "Report", "ParamStats", "Diagnosis"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_CUT_READS = ("item()", "tolist()", "numpy()", "__array__ (a call into NumPy)", "float()",
              "int()", "__index__")
_active = []


class ParamStats:
    """One parameter's gradient figures in a Report (None where there is no gradient)."""

    def __init__(self, name, shape):
        self.name, self.shape = name, tuple(shape)
        self.has_grad = False
        self.grad_norm = self.mean_abs = self.zero_frac = None
        self.nan = self.inf = 0
        self.update_ratio = None      # |step update| / |weight| of the last optimizer step

    def __repr__(self):
        return f"ParamStats({self.name}, norm={self.grad_norm}, mean_abs={self.mean_abs})"


class Diagnosis:
    """One finding: `kind` (exploding, vanishing, dead_relu, detached, bad_init,
    no_gradients), the parameters or modules it is about, and the message in words."""

    def __init__(self, kind, where, message, alarming=True):
        self.kind, self.where, self.message, self.alarming = kind, list(where), message, alarming

    def __str__(self):
        return f"[{self.kind}] {self.message}"

    __repr__ = __str__


class Report:
    """What `report()` found: `params` (ParamStats, in model order), `diagnoses`; printing it
    gives a table and the diagnoses."""

    def __init__(self, step, params, diagnoses):
        self.step, self.params, self.diagnoses = step, params, diagnoses

    @property
    def alarming(self):
        return [d for d in self.diagnoses if d.alarming]

    def kinds(self):
        return {d.kind for d in self.diagnoses if d.alarming}

    def __getitem__(self, name):
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def __str__(self):
        def f(v, fmt="{:.2e}"):
            return "-" if v is None else fmt.format(v)
        w = max([9] + [len(p.name) for p in self.params])
        lines = [f"gradient doctor, step {self.step}",
                 f"{'parameter':<{w}}  {'shape':<14} {'grad norm':>9} {'mean|g|':>9} "
                 f"{'upd/w':>9} {'zeros':>6} {'nan':>5} {'inf':>5}"]
        for p in self.params:
            lines.append(f"{p.name:<{w}}  {str(list(p.shape)):<14} {f(p.grad_norm):>9} "
                         f"{f(p.mean_abs):>9} {f(p.update_ratio):>9} "
                         f"{f(p.zero_frac, '{:.0%}'):>6} {p.nan:>5} {p.inf:>5}")
        if self.diagnoses:
            lines += [""] + [str(d) for d in self.diagnoses]
        else:
            lines += ["", "nothing alarming"]
        return "\n".join(lines)

    __repr__ = __str__


_SEAM = {os.path.join(_EMBER_DIR, "dispatch.py"),
         os.path.join(_EMBER_DIR, "autograd", "grad_mode.py"),
         os.path.join(_EMBER_DIR, "core", "tensor.py")}


def _cut_source(depth):
    """('file:line in fn: code', whether it came through `.data`) of the code that made the
    call, seen past the mode seam and Tensor's own methods; None when that code is ember's
    (ember's internal detach/item calls are not the user's graph cuts)."""
    f, via_data = sys._getframe(depth), False
    while f is not None and (f.f_code.co_filename in _SEAM or f.f_code.co_name == "_data_get"):
        via_data = via_data or f.f_code.co_name == "_data_get"
        f = f.f_back
    if f is None or f.f_code.co_filename.startswith(_EMBER_DIR):
        return None, via_data
    code = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"{f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name} (`{code}`)", via_data


class _CutRecorder:
    """A dispatch mode on during the watched forward: notes each call that takes a tensor
    out of the graph (detach, .data, item(), a NumPy call...) with its user source line."""
    observing = True

    def __init__(self, doctor):
        self.doctor = doctor

    def call(self, op, fn, args, kwargs):
        name = op if isinstance(op, str) else op.name
        if name in ("detach", "detach_") and args and isinstance(args[0], Tensor) \
                and args[0]._requires_grad:
            source, via_data = _cut_source(2)
            if source is not None:
                self.doctor._cuts.append((".data" if via_data else f".{name}()", source,
                                          args[0]))
        return fn(*args, **kwargs)

    def on_read(self, t, what):
        if what in _CUT_READS and t._requires_grad:
            source, _ = _cut_source(2)
            if source is not None:
                kind = ("a NumPy call on the tensor (__array__)" if what.startswith("__array__")
                        else f".{what}" if what.endswith(")") else what)
                self.doctor._cuts.append((kind, source, t))


def _leaves_of(t, limit=100_000):
    """ids of the leaf tensors that `t`'s graph reaches (t itself when it is a leaf)."""
    if t.grad_fn is None:
        return {id(t)}
    out, seen, stack = set(), set(), [t.grad_fn]
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            out.add(id(var))
        stack.extend(n for n, _ in getattr(node, "next_functions", ()))
    return out


def _gain(act):
    if isinstance(act, (ReLU, ReLU6)):
        return math.sqrt(2.0), "He (ReLU): sqrt(2/fan_in)"
    if isinstance(act, LeakyReLU):
        return math.sqrt(2.0 / (1 + act.negative_slope ** 2)), "He (LeakyReLU)"
    if isinstance(act, Tanh):
        return 5.0 / 3.0, "Xavier/LeCun with tanh gain: (5/3)/sqrt(fan_in)"
    return 1.0, "LeCun: 1/sqrt(fan_in)"


class GradDoctor:
    """What `watch` returns: the hooks on one model; `report()` after backward, `remove()`
    when done (or use it as a context manager)."""

    def __init__(self, model, optimizer=None, *, dead_threshold=0.5, vanish_ratio=1e-3,
                 explode_growth=10.0, init_factor=5.0):
        self.model, self.optimizer = model, optimizer
        self.dead_threshold, self.vanish_ratio = dead_threshold, vanish_ratio
        self.explode_growth, self.init_factor = explode_growth, init_factor
        self.step = 0
        self._params = [(n, p) for n, p in model.named_parameters()]
        self._owner = {}               # id(param) -> module path
        for mname, m in model.named_modules():
            for pname, p in m.named_parameters(recurse=False):
                self._owner.setdefault(id(p), mname)
        self._handles = []
        self._recorder = _CutRecorder(self)
        self._norm_history = []
        self._snapshot = None          # weights at the last report (update ratio, no optimizer)
        self._step_ratio = {}          # name -> ratio measured around optimizer.step
        self._reset()
        self._install()
        _active.append(self)

    # ---- hooks ----
    def _install(self):
        root = self.model
        self._handles.append(root.register_forward_pre_hook(self._begin_forward))
        self._handles.append(root.register_forward_hook(self._end_forward, always_call=True))
        for name, m in root.named_modules():
            self._handles.append(m.register_forward_hook(self._module_hook(name)))
        for name, p in self._params:
            if p.requires_grad:
                self._handles.append(p.register_post_accumulate_grad_hook(
                    self._grad_hook(name)))
        if self.optimizer is not None:
            self._handles.append(self.optimizer.register_step_pre_hook(self._before_step))
            self._handles.append(self.optimizer.register_step_post_hook(self._after_step))

    def _reset(self):
        self._ran, self._order, self._dead, self._got = set(), [], {}, set()
        self._cuts = []

    def _begin_forward(self, module, args):
        if self._recorder not in state.modes:
            # at the bottom of the mode stack: a tracer or profiler above it gets every call
            # first, as without the doctor (a mode hands the op below it only the plain call)
            state.modes = (self._recorder,) + state.modes
            data_access_hooks.append(self._recorder.on_read)

    def _end_forward(self, module, args, output):
        state.modes = tuple(m for m in state.modes if m is not self._recorder)
        if self._recorder.on_read in data_access_hooks:
            data_access_hooks.remove(self._recorder.on_read)

    def _module_hook(self, name):
        def hook(module, args, output):
            self._ran.add(name)
            if next(iter(module.children()), None) is None and name not in self._order:
                self._order.append(name)
            if isinstance(module, (ReLU, ReLU6)) and isinstance(output, Tensor) \
                    and output.dim() >= 2:
                a = output._data.reshape(output.shape[0], -1)
                zero = (a == 0).all(axis=0)
                prev = self._dead.get(name)
                self._dead[name] = zero if prev is None or prev.shape != zero.shape \
                    else prev & zero
        return hook

    def _grad_hook(self, name):
        def hook(p):
            self._got.add(name)
        return hook

    def _before_step(self, optimizer, args, kwargs):
        self._pre_step = {n: p._data.copy() for n, p in self._params}

    def _after_step(self, optimizer, args, kwargs):
        before = getattr(self, "_pre_step", None) or {}
        self._step_ratio = {n: _ratio(p._data, before[n]) for n, p in self._params
                            if n in before}
        self._pre_step = None

    def remove(self):
        """Remove every hook; the model runs as if never watched."""
        for h in self._handles:
            h.remove()
        self._handles = []
        self._end_forward(None, None, None)
        if self in _active:
            _active.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    # ---- the report ----
    def report(self):
        """Figures and diagnoses for the gradients now in the model (call after backward);
        starts a new step."""
        self.step += 1
        stats, total_sq, nonfinite = [], 0.0, []
        for name, p in self._params:
            s = ParamStats(name, p.shape)
            g = p._grad
            if g is not None:
                a = g._data.astype(np.float64)
                finite = np.isfinite(a)
                s.has_grad = True
                s.nan, s.inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
                af = a[finite]
                s.grad_norm = float(np.sqrt((af * af).sum()))
                s.mean_abs = float(np.abs(af).mean()) if af.size else 0.0
                s.zero_frac = float((a == 0).mean()) if a.size else 0.0
                total_sq += s.grad_norm ** 2
                if s.nan or s.inf:
                    nonfinite.append(s)
            if name in self._step_ratio:
                s.update_ratio = self._step_ratio[name]
            elif self.optimizer is None and self._snapshot is not None and name in self._snapshot:
                s.update_ratio = _ratio(p._data, self._snapshot[name])
            stats.append(s)
        diagnoses = []
        backward_ran = bool(self._got)
        if not backward_ran:
            diagnoses.append(Diagnosis("no_gradients", [], (
                "no gradient reached any parameter since the last report: call report() "
                "after loss.backward() (and before optimizer.zero_grad())"), alarming=False))
        else:
            self._norm_history.append(math.sqrt(total_sq))
            diagnoses += self._exploding(nonfinite)
            diagnoses += self._vanishing(stats)
            diagnoses += self._detached()
        diagnoses += self._dead_relu()
        if self.step == 1:        # initialisation is judged on the weights as they started
            diagnoses += self._bad_init()
        if self.optimizer is None:
            self._snapshot = {n: p._data.copy() for n, p in self._params}
        self._step_ratio = {}            # shown once: a later report needs a later step
        self._reset()
        return Report(self.step, stats, diagnoses)

    def _exploding(self, nonfinite):
        out = []
        advice = ("clip the gradient norm (ember.nn.utils.clip_grad_norm_(model.parameters(), "
                  "1.0)), use ember.amp.GradScaler under float16 autocast, lower the learning "
                  "rate; ember.autograd.set_detect_anomaly(True) names the op that made the "
                  "first NaN")
        if nonfinite:
            names = [s.name for s in nonfinite]
            counts = ", ".join(f"{s.name}: {s.nan} NaN, {s.inf} inf" for s in nonfinite[:4])
            out.append(Diagnosis("exploding", names, f"exploding gradients: non-finite "
                                 f"values ({counts}). Try: {advice}."))
            return out
        h = self._norm_history[-4:]
        if len(h) >= 3 and all(b > 1.5 * a for a, b in zip(h, h[1:])) and \
                h[-1] >= self.explode_growth * h[0] > 0:
            out.append(Diagnosis("exploding", [], (
                f"exploding gradients: the total gradient norm grew {h[-1] / h[0]:.0f}x over "
                f"the last {len(h)} steps ({', '.join(f'{v:.3g}' for v in h)}). "
                f"Try: {advice}.")))
        return out

    def _weight_layers(self):
        """[(module path, module)] of the Linear/Conv layers in forward order."""
        mods = dict(self.model.named_modules())
        return [(n, mods[n]) for n in self._order if isinstance(mods.get(n), (Linear, _ConvNd))]

    def _vanishing(self, stats):
        by_name = {s.name: s for s in stats}
        layers = []
        for n, m in self._weight_layers():
            s = by_name.get(f"{n}.weight" if n else "weight")
            if s is not None and s.mean_abs is not None:
                layers.append((n, s.mean_abs))
        if len(layers) < 3:
            return []
        (first, g0), (last, g1) = layers[0], layers[-1]
        if g1 <= 0 or g0 / g1 >= self.vanish_ratio:
            return []
        per_layer = (g0 / g1) ** (1 / (len(layers) - 1)) if g0 > 0 else 0.0
        mods = dict(self.model.named_modules())
        acts = sorted({type(mods[n]).__name__ for n in self._order
                       if isinstance(mods.get(n), (Sigmoid, Tanh, ReLU, ReLU6, LeakyReLU))})
        saturating = [a for a in acts if a in ("Sigmoid", "Tanh")]
        if saturating:
            suspect = (f"the suspected activation is {' and '.join(saturating)}: it saturates "
                       "(its derivative is at most 0.25 for Sigmoid, 1 for Tanh, ~0 when "
                       "saturated), so each layer shrinks the gradient")
        elif acts:
            suspect = f"the activations seen are {', '.join(acts)}"
        else:
            suspect = "no activation module was seen (functional activations are invisible)"
        return [Diagnosis("vanishing", [f"{first}.weight", f"{last}.weight"], (
            f"vanishing gradients: mean |grad| falls from {g1:.2e} ('{last}', the last layer) "
            f"to {g0:.2e} ('{first}', the first) over {len(layers)} layers (x{per_layer:.2g} per "
            f"layer); {suspect}. Try ReLU/GELU, residual connections, normalisation layers, "
            "or He/Xavier initialisation."))]

    def _dead_relu(self):
        out = []
        layers = [n for n, _ in self._weight_layers()]
        for name, zero in self._dead.items():
            share = float(zero.mean()) if zero.size else 0.0
            if share < self.dead_threshold:
                continue
            before = [n for n in layers if self._order.index(n) < self._order.index(name)]
            feeder = f" (fed by '{before[-1]}')" if before else ""
            out.append(Diagnosis("dead_relu", [name], (
                f"dead ReLU: {share:.0%} of the {zero.size} units of '{name}'{feeder} output 0 for "
                "every sample of the batch, so no gradient flows through them. Causes: a "
                "learning rate that pushed the biases negative, a bad initialisation or "
                "unnormalised inputs. Try LeakyReLU/GELU, a lower learning rate, He "
                "initialisation, normalised inputs.")))
        return out

    def _detached(self):
        missing = [(n, p) for n, p in self._params if p.requires_grad and n not in self._got
                   and self._owner.get(id(p)) in self._ran]
        if not missing:
            return []
        by_module = {}
        for n, p in missing:
            by_module.setdefault(self._owner[id(p)], []).append((n, p))
        leaves = [(kind, src, _leaves_of(t)) for kind, src, t in self._cuts]
        out = []
        for mod, params in by_module.items():
            names = [n for n, _ in params]
            cut = next(((kind, src) for kind, src, ids in leaves
                        if any(id(p) in ids for _, p in params)), None)
            where = f"module '{mod}'" if mod else "the root module"
            if cut is not None:
                how = (f"the graph was cut by {cut[0]} at {cut[1]}: the values flowed on, the "
                       "gradient could not. Use the tensor itself (values read in Python with "
                       ".item()/.tolist()/.numpy() become constants).")
            else:
                how = ("no cut (.detach(), .data, .item(), a NumPy call) was seen in the forward "
                       "pass: check that this module's output reaches the loss, and that "
                       "requires_grad was not turned off or the gradient cut outside forward.")
            out.append(Diagnosis("detached", names, (
                f"detached subgraph: {', '.join(names)} ({where}, which ran in the forward "
                f"pass) got no gradient; {how}")))
        return out

    def _bad_init(self):
        out = []
        mods = dict(self.model.named_modules())
        order = self._order
        for n, m in self._weight_layers():
            w = m.weight._data
            if w.size < 2:
                continue
            i = order.index(n)
            act = None
            for later in order[i + 1:]:
                lm = mods.get(later)
                if isinstance(lm, (Linear, _ConvNd)):
                    break
                if isinstance(lm, (ReLU, ReLU6, LeakyReLU, Tanh, Sigmoid)):
                    act = lm
                    break
            fan_in = int(np.prod(w.shape[1:]))
            gain, rule = _gain(act)
            want = gain / math.sqrt(fan_in)
            std = float(w.astype(np.float64).std())
            pname = f"{n}.weight" if n else "weight"
            if std == 0:
                out.append(Diagnosis("bad_init", [pname], (
                    f"bad initialisation: every entry of {pname} is equal ({float(w.flat[0]):g})"
                    ": the units are symmetric and learn the same thing. Use "
                    "ember.nn.init.kaiming_normal_ / xavier_uniform_.")))
            elif not (1 / self.init_factor <= std / want <= self.init_factor):
                after = type(act).__name__ if act is not None else "no activation"
                out.append(Diagnosis("bad_init", [pname], (
                    f"bad initialisation: {pname} has std {std:.3g}, {std / want:.2g}x the "
                    f"{want:.3g} of the fan-in rule for {after} (fan_in {fan_in}, {rule}). "
                    "Too large saturates or explodes activations, too small makes them "
                    "vanish; re-initialise with ember.nn.init.kaiming_normal_ (ReLU) or "
                    "xavier_uniform_ (tanh/sigmoid).")))
        return out


def _ratio(now, before):
    denom = float(np.linalg.norm(before.astype(np.float64)))
    diff = float(np.linalg.norm((now.astype(np.float64) - before)))
    return diff / denom if denom > 0 else None


def watch(model, optimizer=None, **thresholds):
    """Start watching `model`'s gradients (and `optimizer`'s steps, for exact update ratios);
    returns a GradDoctor: ``.report()`` after backward, ``.remove()`` when done.

    Thresholds (keywords): ``dead_threshold=0.5`` (share of dead units), ``vanish_ratio=1e-3``
    (first/last layer mean |g|), ``explode_growth=10`` (norm growth over the last steps),
    ``init_factor=5`` (allowed factor between a weight's std and its fan-in rule).

    >>> doctor = ember.utils.grad_doctor.watch(model)      # doctest: +SKIP
    >>> model(x).sum().backward(); print(doctor.report())  # doctest: +SKIP
    """
    return GradDoctor(model, optimizer, **thresholds)


def report(doctor=None):
    """The report of `doctor`, by default the most recently started watch."""
    if doctor is None:
        if not _active:
            raise RuntimeError("grad_doctor.report(): nothing is watched; call "
                               "grad_doctor.watch(model) first")
        doctor = _active[-1]
    return doctor.report()
