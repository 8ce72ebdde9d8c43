"""The device the estimate runs on: its memory (`memory`: data and arithmetic), read
through the probes (`reading`), and mlxcel's available-memory rule fed with this
machine's probes (`available`)."""
