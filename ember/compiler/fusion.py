"""Fusion (placeholder while the C backend is written)."""


class BackendUnavailable(RuntimeError):
    pass


def compile_graph(graph, variant, options):
    raise BackendUnavailable("not built yet")
