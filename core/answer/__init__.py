"""vramscope's answer to one question: "will this model fit this device, and by how much?"

Above mlxcel's estimate (`core.estimate`, its port and nothing else), the split plans
(`core.parallel`) and the calibrations (`core.calibration`): the question (`question`),
the one function that answers it (`answer`), and vramscope's own figures composed
there: the quantization what-ifs (`quantize`), the largest context (`solve`: an exact
search, and `largest_context`, its dozen-estimate guess), the fit rows (`fit`), the one
verdict (`verdict`). Every surface renders an `Answer`.
"""
