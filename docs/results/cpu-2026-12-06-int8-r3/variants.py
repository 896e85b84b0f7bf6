"""Build INT8 variants of an FP32 ONNX: python variants.py FP32 OUTDIR NCALIB CALIBLIST name..."""
import sys, time, onnx, numpy as np
from pathlib import Path
sys.path.insert(0, '/work/wt55')
from y9deploy.engine.onnx_info import inspect_onnx
from y9deploy.int8.calib import calibration_blobs
from y9deploy.int8.quantize import quantize_qdq
from y9deploy.int8.rule import float_nodes, stem_nodes
fp32, out, ncal, lst = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
out.mkdir(exist_ok=True, parents=True)
info = inspect_onnx(Path(fp32))
files = [Path(l.strip()) for l in open(lst) if l.strip()][:ncal]
blobs = calibration_blobs(files, info.imgsz, info.facts.letterbox)
base = float_nodes(info.model, 'stem')
from y9deploy.int8.pool_conv import pools_as_convs
pc_model, rewritten = pools_as_convs(info.model)
print('rewritten', rewritten)
def names(op): return [n.name for n in info.model.graph.node if n.op_type in op]
V = {
  'base': dict(exclude=base),
  'noavg': dict(exclude=base + names({'AveragePool'})),
  'noavg_nosilu': dict(exclude=base + names({'AveragePool', 'Sigmoid', 'Mul'})),
  'noavg_noconcat': dict(exclude=base + names({'AveragePool', 'Concat'})),
  'noavg_noadd': dict(exclude=base + names({'AveragePool', 'Add'})),
  'noavg_nopool': dict(exclude=base + names({'AveragePool', 'MaxPool', 'Resize'})),
  'pconv': dict(exclude=base, model=pc_model),
  'pconv_stemact': dict(exclude=float_nodes(info.model, 'head') + [n for n in stem_nodes(info.model) if not n.endswith('Conv')], model=pc_model),
  'pconv_head': dict(exclude=float_nodes(info.model, 'head'), model=pc_model),
  'pconv_nosig': dict(exclude=base + names({'Sigmoid'}), model=pc_model),
}
for name in sys.argv[5:]:
    t = time.time()
    kw = V[name]
    g = quantize_qdq(kw.get('model', info.model), blobs, batch=1, exclude=kw['exclude'], method=kw.get('method', 'average'), op_types=kw.get('op_types'))
    from y9deploy.export.metadata import build_metadata, set_metadata
    from y9deploy.model_file.onnx_digest import seal
    facts = info.facts.replace(precision='int8', calibration_sha256='0' * 64)
    set_metadata(g, build_metadata(facts, imgsz=info.imgsz, dynamic_batch=False))
    (out / f'{name}.onnx').write_bytes(seal(g.SerializeToString()))
    print(name, 'built in', round(time.time() - t, 1), 's', flush=True)
