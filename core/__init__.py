"""vramscope core: mlxcel's pre-load memory estimate, reproduced byte for byte.

Pure and import-light: standard library only (huggingface_hub lazily, for cache
scanning). No UI, no torch. Import from the module that holds a name
(`core.estimate.estimate`, `core.catalog.resolve`, ...); the package root carries only the version.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
