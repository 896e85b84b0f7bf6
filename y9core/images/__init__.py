"""Image files and pictures.

- ``header``: size and EXIF orientation from the header bytes; ``read``: the one bounded, checked decode;
- ``write``: ``cv2.imwrite`` with its result checked (through ``files.atomic_write``); ``palette``: colours and
  labelled boxes.

Arrows: ``read`` -> ``header``; ``write`` -> ``y9core.files``. ``data`` (image checks) stands on it.
"""
