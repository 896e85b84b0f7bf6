"""Pre-processing: frames -> the network's input blob, on the host or on the device.

- ``host``: numpy + OpenCV (``prepare``, ``letterbox_batch_u8``, frame checks);
- ``torch_letterbox``: the letterbox on torch tensors (the GPU path's "gpu" implementation);
- ``device``: ``DevicePre``, the torch pipeline's pre-processing (hybrid, gpu, cpu);
- ``spec``: ``LetterboxSpec``, a model's letterbox parameters, read once;
- ``impl``: ``PreImpl``, the implementations (``runtime.frame_pipeline.choose_pipeline`` picks one).

The letterbox geometry is ``y9core.letterbox``'s. Importing this package needs numpy and OpenCV only.
"""
