"""Errors raised by y9. Each carries one full sentence naming the file, the value and what was expected."""

from __future__ import annotations


class Y9Error(Exception):
    """Base class of every error y9 raises on purpose."""


class ModelFileError(Y9Error, ValueError):
    """A model, checkpoint, ONNX or engine file is missing, corrupt, or not what was expected."""


class EngineMismatchError(Y9Error):
    """An engine was built for another GPU, TensorRT flavour or version, or from another ONNX file."""


class BackendUnavailableError(Y9Error, RuntimeError):
    """The package a backend needs (tensorrt, tensorrt_rtx, onnxruntime, torch, cuda-python) is missing."""


class DataError(Y9Error, ValueError):
    """A dataset, data.yaml or label file is malformed."""


class DetectorBusyError(Y9Error, RuntimeError):
    """A thread called a Detector while another thread was running it (a Detector serves one thread at a time)."""


class SourceError(Y9Error, ValueError):
    """A video file, folder of frames, camera or stream cannot be opened or read (the reason is named)."""


class RulesFileError(Y9Error, ValueError):
    """An inspection rules file is malformed: one sentence per mistake, each with file:line."""


class ServingError(Y9Error, RuntimeError):
    """A model server (Triton) cannot be reached, does not serve the model, or answered an error."""
