"""What a provider's refusal says about the key and the account, read from the words its body uses.

A 401 is a 401 whether the key was absent, the wrong shape or revoked; the status alone cannot tell
the three apart, and a 429 is both a per-minute limit and an exhausted balance. Most APIs say which in
the body: the key they received echoed back (masked) in the message, or a quota/balance word. Both the
log check (checks/access/client_log.py) and the live probe (checks/access/request.py) read them here,
so a body means the same code whichever way it reached the doctor.
"""

from __future__ import annotations

import re

# the key a provider echoes back in its refusal, masked or whole: the OpenAI API ("Incorrect API key provided:
# sk-proj-****abcd."; a short key in full: "hello."), xAI's copy of it, Together's "Invalid API key provided",
# DeepSeek ("Authentication Fails, Your api key: ****abcd is invalid"), LiteLLM's proxy ("LiteLLM Virtual Key
# expected. Received=abc, expected to start with 'sk-'."; "Malformed API Key passed in. Ensure Key has `Bearer ` prefix.
# Passed in: abc")
KEY_ECHO = re.compile(r"(?P<lead>Incorrect API key provided|Invalid API key provided|Your api key|Virtual Key expected\. Received|"
                      r"`?Bearer ?`? prefix\. Passed in)"
                      r"\s*[:=]\s*(?P<echo>[^\s,]*)", re.I)
# what a client sends when the setting it reads the key from is unset: JavaScript's undefined, Python's None, and the
# stand-ins clients put in for a key nobody gave, because the SDK refuses an empty one: Cline's `apiKey: "noop"` (its LM
# Studio, AnythingLLM and OCA handlers), `apiKey: apiKey || "not-needed"` (the OpenAI-compatible providers of many web UIs
# and agents), vLLM's documented "EMPTY", llama.cpp server's "sk-no-key-required"
ABSENT = {"undefined", "none", "null", "nil", "noop", "not-needed", "not_needed", "empty", "sk-no-key-required", "no-key"}
# characters no provider's key holds: an unexpanded ${VAR} / {{key}} / %VAR% / <your key> template sent as the key
NOT_KEY_CHARS = re.compile(r"[{}$<>%\[\]()]")
# the key shapes the providers that echo a key issue: OpenAI `sk-` (sk-proj-, sk-svcacct-, sk-admin-), xAI `xai-`
SHAPES = (("console.x.ai", "xai-"), ("platform.openai.com", "sk-"))
# other providers' key prefixes, whose own underscore is no word of a placeholder: Groq `gsk_`, Hugging Face `hf_`,
# Perplexity `pplx-`, Anthropic `sk-ant-`, Google `AIza`
FOREIGN_PREFIX = re.compile(r"^(?:gsk_|hf_|pplx-|sk-ant-|AIza)")


def key_echo_code(text: str) -> str | None:
    """access.key_missing when the echoed key is an unset value, access.key_malformed when it is not a key of
    the provider's shape (a placeholder, a template left unexpanded, another provider's key); None when the
    body echoes no key, or one that looks like a real key (then the status decides: access.key_rejected)."""
    m = KEY_ECHO.search(text)
    if m is None:
        return None
    # (the end of the message's JSON string glued to it: `sk-x"}}`)
    echo = re.sub(r"\\?[\"'][}\])]*$", "", m["echo"]).rstrip(".,;'\"\\").strip("'\"`\u2018\u2019\u201c\u201d")
    if not echo:  # nothing echoed (the message quoted alone, its value cut): the status decides
        return None
    if echo.lower() in ABSENT:
        return "access.key_missing"
    if NOT_KEY_CHARS.search(echo):
        return "access.key_malformed"
    lead = m["lead"].lower()
    if lead.endswith("passed in"):  # the header held the scheme and nothing after it (an empty variable), or a bare key
        return "access.key_missing" if echo.lower() == "bearer" else "access.key_malformed"
    if lead.startswith("virtual key"):  # the proxy states the shape it wants itself
        return "access.key_malformed"
    if lead != "incorrect api key provided":
        return None
    prefix = next((p for host, p in SHAPES if host in text), None)
    if prefix is None and re.search(r"https?://", text):
        return None  # another API copying OpenAI's words: its own key shape is not known here
    shape, visible = prefix or "sk-", echo.lower().split("*", 1)[0]  # (a masked key shows only its first characters)
    if visible.startswith(shape) or shape.startswith(visible):
        return None
    # the API echoes a short value whole and masks a long one: a short one is no key at all (a placeholder, a word),
    # and so is a masked one that reads as words (ADD_YOUR*****HERE); a long random one is a key of another
    # provider, which this one refuses (access.key_rejected)
    if "*" not in echo or "_" in FOREIGN_PREFIX.sub("", echo).replace("*", ""):
        return "access.key_malformed"
    return None


# the account is out of money or quota, not sending too fast: OpenAI `insufficient_quota` / "You exceeded your
# current quota, please check your plan and billing details" (Google's Gemini API answers its exhausted quotas
# in the same words, and names each in its QuotaFailure detail: "Quota exceeded for metric: ...", unless the metric
# is one per minute: a rate), Moonshot's `exceeded_current_quota_error`, DeepSeek's 402 "Insufficient Balance",
# OpenRouter "Insufficient credits", Anthropic "Your credit balance is too low", xAI "used all available
# credits or reached its monthly spending limit", LiteLLM's budgets, Cohere's trial key ("limited to 1000 API
# calls / month"; its "5 API calls / minute" is a rate), SiliconFlow "your account balance is insufficient", Alibaba DashScope's `Arrearage`, Zhipu's
# 1113 "余额不足" (balance too low). Not a bare "quota": Azure's per-minute 429 links aka.ms/oai/quotaincrease.
QUOTA = re.compile(r"insufficient_quota|exceeded your current quota|\bQuota exceeded for (?:quota )?metric\b(?!.{0,200}per.?minute)|exceeded_current_quota|check your plan and billing|"
                   r"\binsufficient (?:balance|credits?|funds)\b|account balance is insufficient|credit balance is too low|"
                   r"used all available credits|monthly spending limit|\bbudget has been exceeded\b|\bbudget_exceeded\b|"
                   r"\bexceeded your monthly included credits\b|\bTrial key, which is limited to \d+ API calls / month\b|\bArrearage\b|"
                   r"余额不足|欠费", re.I)
