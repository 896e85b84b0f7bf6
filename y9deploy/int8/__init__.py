"""INT8 for the edge: a calibrated QDQ ONNX, the nodes kept in float, and its accuracy gate."""
