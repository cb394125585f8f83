"""BENCHMARKS.md's "Workload definitions" section, generated from the workload code.

Nothing here is typed by hand: each workload's text is its builder's docstring (training and
inference workloads, benchmarks/train_workloads.py), its module's docstring (op_overhead,
matmul, ...) or its runner's docstring (memory, compile_time in __main__), followed, where the
builder records ``step.spec``, by facts read off the objects it built with real torch: input
shapes and dtypes, parameter count and dtype, the optimizer's class and every default, and the
model's repr (which shows, e.g., ``GELU(approximate='none')``).
"""
import importlib
import inspect

HEADING = "## Workload definitions"


def _doc(obj):
    return inspect.cleandoc(obj.__doc__ or "(no docstring)")


def _tensor(t):
    return f"{str(t.dtype).replace('torch.', '')} {tuple(t.shape)}"


def _spec_lines(spec):
    lines = []
    if "inputs" in spec:
        lines.append("- inputs: " + "; ".join(f"`{k}` {_tensor(v)}"
                                             for k, v in spec["inputs"].items()))
    model = spec.get("model")
    if model is not None:
        params = list(model.parameters())
        dtypes = sorted({str(p.dtype).replace("torch.", "") for p in params})
        lines.append(f"- parameters: {sum(p.numel() for p in params):,} "
                     f"({', '.join(dtypes)}), mode: {'train' if model.training else 'eval'}")
    opt = spec.get("optimizer")
    if opt is not None:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(opt.defaults.items()))
        lines.append(f"- optimizer: `{type(opt).__name__}({args})`")
    if model is not None:
        lines += ["- model:", "", "```", repr(model), "```"]
    return lines


def workload_lines(name, torch, runners):
    """Markdown lines defining workload `name`; `runners` maps the names run by a function
    of their own (memory, compile_time) to that function."""
    from .train_workloads import CASES, SPEC_BUILDER
    if name in CASES:
        build, work, unit = CASES[name]
        lines = [f"### {name} ({unit})", "", _doc(build)]
        spec_build = SPEC_BUILDER.get(name, build)
        torch.manual_seed(0)
        step = spec_build(torch)
        if spec_build is not build:
            lines += ["", f"Model and inputs as {spec_build.__name__}:"]
        spec = getattr(step, "spec", None)
        if spec:
            lines += [""] + _spec_lines(spec)
        return lines
    if name in runners:
        return [f"### {name}", "", _doc(runners[name])]
    mod = importlib.import_module(f"benchmarks.{name}")
    return [f"### {name} ({mod.UNIT})", "", _doc(mod)]


def section(names, torch, runners):
    """The whole section: a heading, then one subsection per workload in `names`."""
    lines = [HEADING, "",
             "Generated from the workload code (docstrings, and the objects each builder made "
             "with torch); ember runs the same code with `import ember as torch`.", ""]
    for name in names:
        lines += workload_lines(name, torch, runners) + [""]
    return lines
