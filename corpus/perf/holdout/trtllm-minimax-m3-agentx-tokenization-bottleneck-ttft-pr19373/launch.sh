export TLLM_PREFIX_TOKEN_CACHE=1            # opt in (server process)
export TLLM_PREFIX_TOKEN_CACHE_MAX_CHARS=268435456   # optional; AgentX-class prompts fill the 64M default at 25 lanes
trtllm-serve ...                            # log: "Prefix token cache enabled for MiniMax-M3 ..." then hit-rate lines every 1000 requests
