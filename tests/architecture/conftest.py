"""The deploy tests' session fixtures (the embedded model exported to ONNX once per run), for the frame trace."""

from tests.deploy.conftest import embedded_export, embedded_pt  # noqa: F401 - fixtures
