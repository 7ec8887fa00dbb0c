"""llm-doctor: diagnose LLM inference services layer by layer (access -> load -> perf)."""

__version__ = "0.1.0"
