"""vramscope's own calibrated estimate: a fit of mlxcel's terms to measured peaks.

Pure and standard library only, like the rest of `core/`. mlxcel's estimate is never
changed by anything here; a calibrated total is always shown beside it, labelled as
vramscope's. See docs/calibration.md for the form, the fit and the figures.
"""
