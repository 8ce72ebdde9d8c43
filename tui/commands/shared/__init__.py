"""What the commands share: the flags and their parsing (`flags`), the estimate and
measurement inputs built from them (`estimate_args`, `measure_args`), and stderr lines
(`output`)."""
