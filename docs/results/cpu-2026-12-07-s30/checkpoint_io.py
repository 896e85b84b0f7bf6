import statistics, sys, time, torch
from y9train.checkpoints.load import read_checkpoint, write_payload
from y9train.models import build_model
def ms(fn, n=7):
    t = []
    for _ in range(n): s = time.perf_counter(); fn(); t.append(time.perf_counter() - s)
    return round(1000 * statistics.median(t), 1)
torch.set_num_threads(1); p = read_checkpoint(sys.argv[1])
print("write", ms(lambda: write_payload(p, "/tmp/ck/x.pt")), "read", ms(lambda: read_checkpoint("/tmp/ck/x.pt")))
m = build_model("gelan-t", nc=80); [setattr(q, "grad", torch.randn_like(q)) for q in m.parameters()]
for impl in ("foreach", "fused"):
    o = torch.optim.AdamW(m.parameters(), lr=1e-3, **{impl: True}); o.step(); print(impl, ms(o.step, 20))
