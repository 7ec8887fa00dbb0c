"""gate-layer checks: the requirements a deploy pipeline sets in llm-doctor.toml."""
