"""The package version (``ember.version.__version__``, as ``torch.version``): the top
namespace re-exports it and the compiler's cache keys include it."""
__version__ = "0.1.0"
