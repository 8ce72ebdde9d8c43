"""Models read from the Hugging Face Hub: config, index and safetensors headers only.

`core.hub.store` keeps what was read under `$XDG_CACHE_HOME/vramscope/hub/`;
`core.hub.remote` reads it through huggingface_hub (imported lazily, so
`import core` never loads it).
"""

DEFAULT_TIMEOUT_S = 10.0
"""Seconds one Hub request may take (`--hub-timeout`); here so the CLI's parser stays light."""
