"""Baselines: did the change work? `llm-doctor baseline record` sends a fixed request set and
keeps what came back (outputs, latency, throughput, the server's own state); `compare` puts two
recordings side by side and names what regressed, what changed in quality, which configuration
change had no effect, and what memory grew.

- requests.py  the request set (shipped or --prompts) and how an expected answer is scored
- model.py     the baseline file: dataclasses, JSON with a schema version, secrets masked
- compare.py   pure functions: the two recordings' figures, their verdicts, the findings, from
               stats.py (percentiles, noise, verdicts), answers.py (scoring, text diffs) and
               effects.py (configuration changes and whether they took effect)
- render.py    the side-by-side table and the ranking
- commands.py  what `record` and `compare` do between the flags and the output
The recorder itself talks to the endpoint, so it lives in doctor/collect/baseline.py.
"""
