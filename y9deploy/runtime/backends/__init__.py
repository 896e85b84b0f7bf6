"""The inference backends (ONNX Runtime, TensorRT, torch) behind one protocol."""
