"""y9core: the basics both y9train and y9deploy build on; imports nothing of y9.

Modules of its own: ``errors``, ``version``, ``wording``, ``shorten``, ``device_spec``, ``deferred_signals``,
``model_facts`` (the one record of a model), ``letterbox`` (geometry and the host letterbox), ``boxes`` (the numpy box
operations: IoU, NMS, decode) and ``box_iou_torch`` (the torch IoU). Rooms, top to bottom:

    data/  evaluation/  post/     data.yaml and labels | metrics and validation reports | decode + NMS
        \\      |
       images/                   image files: header, checked decode and write, colours
          |
       files/                    atomic writes, appends, run folders, input paths, YAML
"""
