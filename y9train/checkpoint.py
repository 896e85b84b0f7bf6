"""``y9train.checkpoint.load_checkpoint``, the loader named by DESIGN.md's contract. It lives in
``y9train.checkpoints.load`` (the checkpoint room: y9train/checkpoints); this name stays for the contract.
"""

# contract path (DESIGN.md, Contracts): re-exports only; written by the house's move script
from y9train.checkpoints.load import load_checkpoint

__all__ = ["load_checkpoint"]
