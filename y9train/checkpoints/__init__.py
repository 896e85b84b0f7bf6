"""The files a model is kept in: y9's own checkpoints and official ones."""
