"""ember.onnx's exceptions, named as torch.onnx.errors names them (no onnx import here)."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter (torch.onnx.errors.OnnxExporterError)."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op of the model has no ONNX mapping, or a case of it that ONNX cannot express; the
    message names the op and the user's line that called it."""


__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]
