"""Checks of a model file itself, below export, the engine builder and the runtime (which all use them): the sha256
digest sealed into y9's ONNX files (``onnx_digest``) and the load-time checks that a model's inputs and outputs are
those of a YOLO detector (``io_checks``). numpy only."""
