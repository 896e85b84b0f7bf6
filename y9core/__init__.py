"""y9core: the basics both y9train and y9deploy build on (errors, atomic writes, letterbox geometry, the numpy
and torch box IoU)."""
