"""Backend array modules per device (see ember.core.device.backend): NumPy on cpu."""
