"""An exported program's graph signature: what each graph input and output is (torch.export's
ExportGraphSignature, InputSpec, OutputSpec, InputKind, OutputKind).

The graph takes the lifted state first (parameters, buffers, constant tensors, by FQN) and
then the user's inputs (flattened); it returns the new values of mutated buffers first, then
the user's outputs (flattened).

>>> ep = ember.export.export(ember.nn.Linear(3, 2), (ember.randn(1, 3),))
>>> ep.graph_signature.parameters
['weight', 'bias']
"""
import enum
from dataclasses import dataclass


class InputKind(enum.Enum):
    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()
    CUSTOM_OBJ = enum.auto()
    TOKEN = enum.auto()


class OutputKind(enum.Enum):
    USER_OUTPUT = enum.auto()
    LOSS_OUTPUT = enum.auto()
    BUFFER_MUTATION = enum.auto()
    GRADIENT_TO_PARAMETER = enum.auto()
    GRADIENT_TO_USER_INPUT = enum.auto()
    USER_INPUT_MUTATION = enum.auto()
    TOKEN = enum.auto()
    PARAMETER_MUTATION = enum.auto()


@dataclass
class TensorArgument:
    name: str


@dataclass
class ConstantArgument:
    name: str
    value: object


@dataclass
class InputSpec:
    kind: InputKind
    arg: object
    target: object
    persistent: object = None

    def __str__(self):
        s = f"{self.arg.name}: {self.kind.name}"
        if self.target is not None:
            s += f" target={self.target!r}"
        if self.persistent is not None:
            s += f" persistent={self.persistent}"
        return s


@dataclass
class OutputSpec:
    kind: OutputKind
    arg: object
    target: object

    def __str__(self):
        s = f"{self.arg.name}: {self.kind.name}"
        return s + (f" target={self.target!r}" if self.target is not None else "")


@dataclass
class ExportGraphSignature:
    """The kinds of the graph's inputs and outputs, in graph order."""
    input_specs: list
    output_specs: list

    def _in(self, kind):
        return [s for s in self.input_specs if s.kind is kind]

    def _out(self, kind):
        return [s for s in self.output_specs if s.kind is kind]

    @property
    def user_inputs(self):
        return tuple(s.arg.name for s in self._in(InputKind.USER_INPUT))

    @property
    def parameters(self):
        return tuple(s.target for s in self._in(InputKind.PARAMETER))

    @property
    def buffers(self):
        return tuple(s.target for s in self._in(InputKind.BUFFER))

    @property
    def non_persistent_buffers(self):
        return tuple(s.target for s in self._in(InputKind.BUFFER) if s.persistent is False)

    @property
    def lifted_tensor_constants(self):
        return tuple(s.target for s in self._in(InputKind.CONSTANT_TENSOR))

    @property
    def user_outputs(self):
        return tuple(s.arg.name for s in self._out(OutputKind.USER_OUTPUT))

    @property
    def inputs_to_parameters(self):
        return {s.arg.name: s.target for s in self._in(InputKind.PARAMETER)}

    @property
    def inputs_to_buffers(self):
        return {s.arg.name: s.target for s in self._in(InputKind.BUFFER)}

    @property
    def inputs_to_lifted_tensor_constants(self):
        return {s.arg.name: s.target for s in self._in(InputKind.CONSTANT_TENSOR)}

    @property
    def buffers_to_mutate(self):
        return {s.arg.name: s.target for s in self._out(OutputKind.BUFFER_MUTATION)}

    @property
    def user_inputs_to_mutate(self):
        return {s.arg.name: s.target for s in self._out(OutputKind.USER_INPUT_MUTATION)}

    def __str__(self):
        lines = ["# inputs"] + [str(s) for s in self.input_specs] + ["", "# outputs"] + \
            [str(s) for s in self.output_specs]
        return "\n".join(lines)
