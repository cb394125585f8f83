"""DataPipes (PyTorch's ``torch.utils.data.datapipes``): the pipe classes and decorators
(datapipe.py) and the built-in pipes, iterable-style (iter.py) and map-style (map.py)."""
from .datapipe import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe,  # noqa: F401
                       functional_datapipe, guaranteed_datapipes_determinism, non_deterministic,
                       argument_validation, runtime_validation, runtime_validation_disabled)
# the built-in pipes register their functional forms (map, filter, batch, ...)
from . import iter, map  # noqa: E402,F401,A004
