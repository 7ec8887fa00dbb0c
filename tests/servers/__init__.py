"""Real servers on 127.0.0.1 for the access tests: an OpenAI/vLLM-like app, an Anthropic-like
app, canned answers, TLS with trustme certificates, and a forwarding/CONNECT proxy."""
