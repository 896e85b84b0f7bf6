"""Errors raised by y9. Each carries one full sentence naming the file, the value and what was expected.

One family: every error y9 raises on purpose is a ``Y9Error`` (the CLI prints any of them as one ``error: ...``
sentence). Most carry a built-in base too, so that ``except ValueError`` / ``RuntimeError`` keeps working.
Defined here, the bottom package both y9train and y9deploy import:

- ``ModelFileError`` (ValueError): a model, checkpoint, ONNX or engine file is missing, corrupt or unexpected;
- ``EngineMismatchError``: an engine built for another GPU, TensorRT flavour or version, or ONNX file;
- ``BackendUnavailableError`` (RuntimeError): a package a backend needs is missing;
- ``DataError`` (ValueError): a dataset, data.yaml or label file is malformed;
- ``ConfigFileError`` (ValueError): a YAML configuration file (hyperparameters ...) is malformed or beyond the
  loader's limits (``y9core.files.yaml_load``);
- ``ImageFileError`` (ValueError): an image file cannot be used (unreadable, not an image, more pixels than the
  limit, cut short or corrupt); ``.path`` and ``.reason`` say which and why;
- ``DetectorBusyError`` (RuntimeError): a second thread entered a Detector;
- ``SourceError`` (ValueError): a video, folder of frames, camera or stream cannot be opened or read;
- ``RulesFileError`` (ValueError): an inspection rules file is malformed;
- ``ServingError`` (RuntimeError): a model server cannot be reached or answered an error;
- ``OutputError`` (ValueError): an output would overwrite an input or earlier results, or its folder is being
  written by another process (``y9core.files.run_dir``).

Defined beside the code that raises them (subclasses of ``Y9Error`` all the same):

- ``y9train.models.config.ConfigError`` (ValueError): a model configuration file is malformed;
- ``y9train.checkpoints.official_pickle.UnsafePickleError`` (pickle.UnpicklingError): an official checkpoint's pickle asks
  for a global outside the allow-list (checkpoint loading reports it as a ``ModelFileError``);
- ``y9deploy.runtime.backends.cuda.CudaError`` (RuntimeError): a CUDA runtime call failed;
- ``y9deploy.engine.verify.EngineVerificationError``: a built engine scored too far below its source model.
- ``y9train.loop.divergence.TrainingDivergedError`` (RuntimeError): a training run's weights went NaN or inf.

Bad frames and arguments (a frame that is not HxWx3 uint8, an empty batch, a threshold out of range) raise the
built-in ``TypeError`` / ``ValueError`` with the same one-sentence message.
"""

from __future__ import annotations


class Y9Error(Exception):
    """Base class of every error y9 raises on purpose."""


class Y9Notice(UserWarning):
    """Base class of the warnings y9 gives on purpose (one sentence each; the CLI prints ``warning: <sentence>``)."""


class ModelFileError(Y9Error, ValueError):
    """A model, checkpoint, ONNX or engine file is missing, corrupt, or not what was expected."""


class EngineMismatchError(Y9Error):
    """An engine was built for another GPU, TensorRT flavour or version, or from another ONNX file."""


class BackendUnavailableError(Y9Error, RuntimeError):
    """The package a backend needs (tensorrt, tensorrt_rtx, onnxruntime, torch, cuda-python) is missing."""


class DataError(Y9Error, ValueError):
    """A dataset, data.yaml or label file is malformed."""


class ConfigFileError(Y9Error, ValueError):
    """A YAML configuration file is malformed, too large, or an alias bomb (see ``y9core.files.yaml_load``)."""


class ImageFileError(Y9Error, ValueError):
    """An image file cannot be used: unreadable, not an image, more pixels than the limit, cut short or corrupt.

    ``reason`` reads after "it" (``"is a JPEG cut short (no end-of-image marker)"``); the message is
    ``"image <path> <reason>."``.
    """

    def __init__(self, path: object, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"image {path} {reason}.")

    def __reduce__(self):
        return type(self), (self.path, self.reason)


class DetectorBusyError(Y9Error, RuntimeError):
    """A thread called a Detector while another thread was running it (a Detector serves one thread at a time)."""


class SourceError(Y9Error, ValueError):
    """A video file, folder of frames, camera or stream cannot be opened or read (the reason is named)."""


class RulesFileError(Y9Error, ValueError):
    """An inspection rules file is malformed: one sentence per mistake, each with file:line."""


class ServingError(Y9Error, RuntimeError):
    """A model server (Triton) cannot be reached, does not serve the model, or answered an error."""


class OutputError(Y9Error, ValueError):
    """An output path is refused: it is an input or inside an input folder, it holds earlier results (without
    ``--exist-ok``), or another process is writing its folder."""
