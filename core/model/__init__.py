"""Reading one model: `config.json`, safetensors headers, the snapshot the estimate
takes, and the words that describe its format. Untrusted input: every read is capped."""
