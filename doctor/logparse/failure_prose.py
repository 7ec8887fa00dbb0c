"""Load and access failures a person states in a sentence: the facts behind a report that pastes no log.

Many reports are a title and a few sentences: "transformers does not recognize this architecture",
"vLLM is too old for this model", "32 heads are not divisible by 5 GPUs", "the stream arrives all at
once behind nginx", "the request 401s". Such a sentence names the failure with the terms of the
code's own definition (doctor/codes.py, shared/codes.md) and of the engines' and clients' messages
(the catalogue's wordings, doctor/data/catalogue/*.jsonl: "Model architectures [...] are not
supported", "requires you to execute the configuration file ... trust_remote_code=True", "must be
divisible by tensor parallel size", "Connection refused", "CERTIFICATE_VERIFY_FAILED", "429 Too Many
Requests", ...), said in a person's words. Each such sentence becomes a FailureStatement in
facts.said, with the code it names; checks/load/stated.py reports it as a finding of the evidence
tier "statement" (below every finding a log line or a probe gives, never an all-clear).

The shape follows doctor/logparse/perf_prose.py: read only lines with no log level, no process tag,
no timestamp and no exception or traceback shape (a person's words carry none; what an engine
printed is the catalogue's to read), outside ``` fences, joined across hard wraps and cut at
sentence ends. Questions, advice, possibilities, fixes already made and healthy statements state no
failure. Sentences are redacted before they are kept (a pasted key or token is never evidence as
typed).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from llm_doctor.facts import Facts
from llm_doctor.facts.stated import FailureStatement
from llm_doctor.logparse import required as rq
from llm_doctor.logparse.denial import denied
from llm_doctor.logparse.failures import CARET, EXCEPTION, FRAME, TRACEBACK, own_level
from llm_doctor.logparse.lines import normalise
from llm_doctor.logparse.perf_prose import TOOL_ROW

# a sentence ends at a stop before a capital, and at the line's last stop; a question keeps its mark, for QUESTION to read
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z(*`\"'\-])|(?<=[a-z)])[.!]\s*$")
MAX_SENTENCE = 600  # longer is a pasted blob, not a person's words
MAX_STATEMENTS = 16
MAX_LINES = 2000  # a person's text is short: the head of a big log is all that is read
HEAD_BYTES = 256 * 1024  # of a file, what is read for them
WRAP = 3  # lines around a term that may hold the rest of its hard-wrapped sentence


_FAIL = (r"(?:fail\w*|error\w*|crash\w*|broken|breaks?|(?:does|did|do|is|was|are|were|can|could|will|wo)(?:\s?not|n't)\s(?:\w+\s)?"
         r"(?:work|load|start|run|connect|resolve|recogni[sz]e|support|find|fit|stream)\w*|cannot|can't|unable|refus\w*|reject\w*)")
# the client's stream (SSE): "stream", "streaming", "SSE", "text/event-stream", "chunks", "token by token"
STREAM = r"(?:\bstream\w*|\bSSE\b|event-stream|\bchunk\w*|token[- ]by[- ]token)"
ENGINES = r"(?:vLLM|SGLang|TGI|text-generation-inference|transformers?|llama\.cpp|llama-cpp-python|Ollama|LMDeploy|TensorRT-LLM|TRT-?LLM|turbomind|engine)"

GAP = r"(?:[^.]|\.(?=\S)){0,80}?"  # within one sentence: a dot inside a URL, a file or a version is no sentence end
# GPU memory that ran out, as the engines say it (torch "CUDA out of memory", llama.cpp "unable to allocate
# CUDA0 buffer", "failed to allocate ... MiB", Ollama "out of memory") and as people do ("OOMs", "not possible to allocate")
OOM = (r"(?:\bOOM(?:s|ed|ing)?\b|\bout of (?:GPU |CUDA |device |video |VRAM )?memory\b|\b(?:not enough|insufficient) (?:GPU |CUDA |device |video )?(?:memory|VRAM)\b|\b(?:not possible|unable|cannot|can't|could ?n[o']t|"
       r"fail(?:s|ed)?) to allocate\b(?:[^.]|\.(?=\d)){0,40}?\b(?:memory|VRAM|buffer|[MG]i?B)\b)")  # (a size's decimal point is no sentence end)
# (code, words): tried in this order, the first that a sentence holds is the failure it names; a cause
# before the symptom it shares words with (quotes in a key before the 401 they cause, a stream's buffering
# before the reverse proxy it happens in, OOM while loading before OOM in general)
VOCABULARY: tuple[tuple[str, re.Pattern[str]], ...] = (
    # the Hub's 401/403 for a gated or private repository is the model's files, not the server's key
    ("load.model_files", re.compile(
        r"(?:huggingface|hugging face|\bHF\b|hf_hub|HF_TOKEN|\bgated\b)" + GAP + r"\b(?:40[13]|unauthori[sz]ed|forbidden|not (?:have )?access)\b|"
        r"\b40[13]\b" + GAP + r"(?:huggingface|hugging face|\bHF\b|hf_hub|\bgated\b)", re.I)),
    # --- access: the channel to the model ------------------------------------------------------------
    # a key with quotes, whitespace, a newline or a doubled `Bearer ` (codes.md access.key_malformed); the quote after
    # `Bearer ` must open a key, not close a string in code (`"Bearer " + api_key`)
    ("access.key_malformed", re.compile(
        r"\b(?:api[ _-]?)?key\b[^.]{0,60}?\b(?:literal |extra |surrounding |trailing |leading )?(?:quotes|quotation marks|whitespace|newline|"
        r"trailing (?:space|\\n)|line ?break)\b|Bearer\s+[\\]?[\"'](?=[\w-]{6})|Bearer Bearer|\bdouble[d]? ['\"`]?Bearer\b", re.I)),
    # the key's stray characters in Chinese (API key 末尾多一个引号 "one quote too many at the end of the API key", 带空格, 换行)
    ("access.key_malformed", re.compile(r"(?:API ?key|密钥|key)[^。]{0,20}?(?:多(?:一个|了|出)?|带(?:有|上|了)?|包含|含有)\s?(?:引号|空格|空白|换行)", re.I)),
    # "no API key provided", "OPENAI_API_KEY is not set" (OpenAI's client: "The api_key client option must be set")
    ("access.key_missing", re.compile(
        r"\bno (?:[\w.-]+ )?api[ _-]?key (?:was |is )?(?:set|provided|found|given|configured)\b|\bapi[ _-]?key\b[^.]{0,30}?\b(?:is |was )?"
        r"(?:missing|not (?:set|provided|found|configured)|empty)\b|\b[A-Z_]*API_KEY\b[^.]{0,20}?\b(?:is |was )?(?:not set|missing|unset|empty)\b|"
        # the 401 of a request that carried none: OpenAI API "You didn't provide an API key", OpenRouter "No auth credentials
        # found" / "Missing Authentication header", an empty `Bearer ` header
        r"\bdid(?: not|n't) provide an api[ _-]?key\b|\bno auth(?:entication)? credentials\b|\bmissing (?:the )?(?:authentication|authorization) header\b|"
        r"\bempty (?:bearer|authorization|api[ _-]?key)\b", re.I)),
    # a key said to be required ("OpenAI API key is required", "Requires OpenAI key", "I must set OpenAI key even when using
    # local model"; the OpenAI client's "The api_key client option must be set"); in Chinese 问我要key "it asks me for a key"
    ("access.key_missing", re.compile(
        r"\b(?:api[ _-]?)?key (?:is |was )?(?:still )?required\b|\brequires? (?:an? |the |my )?(?:[\w-]+ ){0,2}(?:api[ _-]?)?key\b|"
        r"\bmust (?:set|provide|add|enter|pass) (?:an? |the |my )?(?:[\w-]+ ){0,2}(?:api[ _-]?)?key\b|\bapi[ _-]?key\b[^.]{0,40}?\bmust be (?:set|provided)\b|"
        r"(?:问我要|要求(?:填写|输入)?|缺少|没有(?:填|设置|配置)?)\s?(?:API ?)?key", re.I)),
    # 401/403 answers, "Incorrect API key provided", "invalid x-api-key", "authentication_error"
    ("access.key_rejected", re.compile(
        r"\b40[13]s?\b(?! ?(?:ms|bytes|tokens))|\bunauthori[sz]ed\b|\b(?:invalid|incorrect|wrong|expired|revoked) (?:[\w-]+ )?(?:api[ _-]?key|key|token)\b|"
        r"\b(?:api[ _-]?key|token)\b[^.]{0,30}?\b(?:is |was |gets? |got )?(?:rejected|invalid|not (?:valid|accepted)|expired|revoked)\b|"
        r"\bauthentication(?:_| )(?:error|fail\w*)\b", re.I)),
    # the key said not to work ("New API Keys from Openai are not supported", "my API key doesn't work", API Key 填写无作用
    # "filling in the API key has no effect")
    ("access.key_rejected", re.compile(
        r"\b(?:api[ _-]?keys?|keys?|tokens?)\b[^.]{0,30}?\b(?:are |is |was |were )?(?:not (?:supported|accepted|working|recogni[sz]ed)|"
        r"(?:does|do|did)(?: not|n't) work|(?:has|have|had) no effect)\b|(?:API ?Key|密钥|令牌)[^。]{0,12}?(?:无效|错误|不对|无作用|不起作用|被拒|失效)", re.I)),
    # 402 / insufficient_quota / billing (OpenAI "You exceeded your current quota")
    ("access.quota_exceeded", re.compile(
        r"\bquota\b|\binsufficient[_ ](?:quota|credits?|balance|funds)\b|\bbilling\b|\b402\b|\bpayment required\b|\bout of credits?\b|"
        # OpenRouter's 402 body: "This request requires more credits, or fewer max_tokens. ... but can only afford 0"
        r"\brequires? more credits?\b|\bcan only afford\b|\bcredit balance\b", re.I)),
    # 429 (OpenAI RateLimitError, Anthropic rate_limit_error, "Too Many Requests")
    ("access.rate_limited", re.compile(r"\b429\b|\brate[ _-]?limit\w*|\btoo many requests?\b|\bthrottled by the (?:api|provider|server)\b", re.I)),
    # "certificate verify failed", "self-signed certificate", "SSL: WRONG_VERSION_NUMBER", x509
    # Python's TLS exception names said in a sentence ("SSLCertVerificationError when using LlamaParse")
    ("access.tls_failed", re.compile(r"\bSSL(?:CertVerification|ZeroReturn|EOF)?Error\b|\bCertificateError\b|\bCERTIFICATE_VERIFY_FAILED\b")),
    ("access.tls_failed", re.compile(
        r"\bcertificate\b[^.]{0,40}?\b(?:verif\w* fail\w*|fail\w*|invalid|expired|not trusted|untrusted|error|problem|issue)|"
        r"\bself[- ]signed\b|CERTIFICATE_VERIFY_FAILED|WRONG_VERSION_NUMBER|\bx509\b|\b(?:SSL|TLS)\b[^.]{0,30}?\b(?:error|fail\w*|handshake)\b", re.I)),
    # a forward proxy from env or flags (HTTP(S)_PROXY, NO_PROXY, a corporate proxy): a reverse proxy in front
    # of the server (nginx) that buffers a stream is access.streaming_broken, below
    ("access.streaming_broken", re.compile(
        STREAM + r"[^.]{0,80}?\b(?:buffer\w*|stall\w*|hang\w*|hung|stops?|stopped|freez\w*|cut (?:off|short)?|truncat\w*|breaks?|broken|"
        r"malformed|invalid|(?:arriv\w*|come|came|appear\w*|show\w*(?: up)?|display\w*)[^.]{0,30}?\b(?:at once|all at the same time|at the same time|"
        r"together|in (?:one|a single) (?:go|piece|block|burst|chunk|shot))|only (?:the )?first|after the first|never (?:ends?|finish\w*|arriv\w*)|not (?:work\w*|stream\w*)|"
        # everything held until the answer is complete: "the response only arrives after the whole generation is done"
        r"(?:arriv\w*|com(?:es|ing)|came|appear\w*|show\w*(?: up)?) only (?:after|at the end|once)\b|"
        r"only (?:arriv\w*|com(?:es|ing)|came|appear\w*|show\w*(?: up)?) (?:after|at the end|once)\b|"
        r"(?:does|did|is)(?: not|n't) (?:work\w*|stream\w*))|"
        r"\b(?:buffer\w*|accumulat\w*)\b[^.]{0,80}?" + STREAM + r"|\bnon-stream\w*\b[^.]{0,40}?\bworks?\b[^.]{0,40}?\bstream|"
        # nginx's per-response switch for its proxy buffering (ngx_http_upstream: `X-Accel-Buffering: no`): named, it is
        # an event stream that nginx holds back; a stream that stalls ("no downstream bytes for minutes", "the response
        # stopped arriving")
        r"\bX-Accel-Buffering\b|\b(?:response|stream|answer|output|tokens?|chunks?|bytes)\b[^.]{0,20}?\b(?:stopped|stops) (?:arriving|coming|flowing)\b|"
        r"\bno (?:downstream |more )?(?:bytes|chunks|tokens|events)\b[^.]{0,20}?\bfor (?:minutes|\d+ ?(?:s|sec\w*|min\w*))\b", re.I)),
    # everything delivered at the end, told of the tokens ("tokens arrived in one burst at the end")
    ("access.streaming_broken", re.compile(
        r"\b(?:tokens|chunks|deltas|events|output|text|response)\b[^.]{0,20}?\b(?:arriv\w*|come|came|appear\w*|show\w*(?: up)?|deliver\w*|sent|flush\w*)"
        r"\b[^.]{0,20}?\bin (?:one|a single) (?:burst|go|chunk|block|piece|shot)\b", re.I)),
    # a stream that comes in bursts ("Streaming output ... is extremely slow (40–50-token bursts)")
    ("access.streaming_broken", re.compile(STREAM + r"[^.]{0,80}?\b(?:bursts?|choppy|janky|stutter\w*)\b", re.I)),
    # 流式输出一次性返回 ("the streamed output comes back all at once"), 流式失效, a stream stuck or cut, buffering before it
    ("access.streaming_broken", re.compile(r"流式[^。]{0,30}?(?:一次性|一起|全部(?:返回|输出|出来)|失效|不生效|无效|不起作用|卡住|卡死|中断|断开|缓冲)|"
                                           r"(?:缓冲|緩衝)[^。]{0,20}?流式")),
    # a stream held back until the answer is complete, as people tell it ("the UI waits until the full answer is generated",
    # "delayed until the end of generation", "not flushed until the response completes", "nothing appears until the end"),
    # and one cut before its end ("cut off mid-stream", "ends without [DONE]", the terminator the SSE stream lacks)
    ("access.streaming_broken", re.compile(
        STREAM + r"[^.]{0,100}?\b(?:wait\w*|delay\w*|held|hold\w*|buffer\w*|not|nothing|only|never)\b[^.]{0,60}?\b(?:until|till)\b "
        r"(?:the )?(?:very )?(?:end\b|(?:full|whole|entire|complete) (?:answer|response|output|reply|generation|completion)|"
        r"(?:generation|response|answer|output|completion|request) (?:is )?(?:finish\w*|complet\w*|done))|"
        r"\b(?:cut off|truncated|interrupted|dropped|stops?|stopped|ends?|ended|breaks?|broke)\b[^.]{0,20}?\bmid-?(?:stream|response|answer|generation)\b|"
        + STREAM + r"[^.]{0,40}?\b(?:ends?|ended|finish\w*|clos\w*|stops?|stopped)\b[^.]{0,20}?\bwithout (?:a |the )?(?:final )?(?:data: )?\[DONE\]", re.I)),
    # a stream told by what the reader no longer sees: the text not shown in real time or word by word, but at the end
    # ("the generated text is not displayed in real-time and instead only appears at the end of the answer")
    ("access.streaming_broken", re.compile(
        r"\b(?:text|answers?|responses?|repl(?:y|ies)|output|tokens?|words?|content|messages?)\b[^.]{0,40}?\b(?:not|no longer|never)\b"
        r"[^.]{0,30}?\b(?:in real[- ]?time|word[- ]by[- ]word|token[- ]by[- ]token|incrementally|progressively)\b|"
        r"\b(?:text|answers?|responses?|repl(?:y|ies)|output)\b[^.]{0,40}?\b(?:only )?(?:appears?|shows? up|pops? up|is shown|is displayed)"
        r" (?:only )?at the (?:very )?end\b", re.I)),
    # the request said to go through a proxy ("connect with proxy", "HTTPS requests through HTTP proxy do not work"), the
    # sentence saying what went wrong (CONTEXT_ONLY)
    ("access.proxy_failed", re.compile(
        r"\b(?:connect\w*|reach\w*|through|via|with|behind|over) (?:the |a |my |our |an |their )?(?:HTTPS? |SOCKS5? |system )?proxy\b", re.I)),
    ("access.proxy_failed", re.compile(
        r"\b(?:corporate|company|forward|outbound|egress|squid|socks5?|https?)[ -]proxy\b|\b(?:no|https?|all)_proxy\b|\bproxy (?:env|settings?|variables?)\b|"
        r"\b407\b|\bproxy authentication required\b|\bproxy\b[^.]{0,40}?\b(?:unreachable|refus\w*|intercept\w*|blocks?|blocked)\b|"
        # the failure tied to the proxy being switched on ("when the VPN/proxy is on, LM Studio can't be reached")
        r"\bproxy\b[^.;]{0,20}?\b(?:is|was|gets|got) (?:switched |turned )?(?:on|enabled|active)\b", re.I)),
    # "Could not resolve host", "getaddrinfo ENOTFOUND", "Name or service not known", "nodename nor servname"
    # the lookup said to fail ("Host lookup fails", "it still fails the lookup")
    ("access.dns_failed", re.compile(
        r"\bfail\w* (?:the |a |to )?(?:DNS |host(?:name)? |name )?(?:lookup|look up|resolution)\b|\b(?:host|DNS|name) ?lookups? fail\w*", re.I)),
    ("access.dns_failed", re.compile(
        r"\b(?:could ?n[o']t|cannot|can't|unable to|fail\w* to) resolve\b(?! (?:the |an? )?(?:authentication|auth|credentials?|api[ _-]?key|import|module|"
        r"dependenc\w*|reference|symbol|path|type|conflict|issue|problem))|\bname resolution\b|\bgetaddrinfo\b|\bENOTFOUND\b|\bEAI_AGAIN\b|"
        r"\bName or service not known\b|\bno such host\b|\bDNS\b[^.]{0,30}?\b(?:fail\w*|error|lookup)", re.I)),
    # ECONNREFUSED, "Connection refused", "Failed to establish a new connection", "Cannot connect to host"; not Ray's
    # "Worker unexpectedly exits with a connection error code 2" (raylet node_manager.cc): a worker's death, not a client's
    ("access.connect_failed", re.compile(
        r"\bconnection (?:was )?(?:refused|reset)\b|\bECONNREFUSED\b|\bECONNRESET\b|\b(?:could ?n[o']t|cannot|can't|unable to|fail\w* to|"
        r"(?:does|did)(?: not|n't)|not able to) (?:establish (?:a )?(?:new )?connection|connect)\b|\bno route to host\b|\bAPIConnectionError\b|"
        r"\bconnection error\b(?! code -?\d)|"
        # "Problem connecting VSCode (Continue) to the server", "the connection fails"
        r"\b(?:problems?|issues?|trouble|errors?) (?:with )?connecting\b|\bconnection\b[^.]{0,10}?\bfail(?:s|ed|ing)?\b", re.I)),
    # "The model `x` does not exist", "model not found" as an API's 404 (not a file on disk: load.model_files)
    ("access.model_not_found", re.compile(
        r"\bmodel\b[^.]{0,50}?\b(?:does not exist|not found|is not (?:served|available|listed)|unknown)\b[^.]{0,40}?\b(?:404|API|endpoint|server|request|served)|"
        r"\b404\b[^.]{0,40}?\bmodel\b|\bmodel\b[^.]{0,40}?\b404\b|\bmodel_not_found\b|\bNotFoundError\b[^.]{0,30}?\bmodel", re.I)),
    # the model's name said to be wrong or not found when the API is called ("Model name error in vllm deployment",
    # "wrong model name"; 使用 vllm API 方式运行找不到名字 "run through the vLLM API, the name is not found", 模型名称不一致)
    ("access.model_not_found", re.compile(
        r"\b(?:wrong|incorrect|invalid|mismatch\w*|unknown) model (?:name|id)\b|\bmodel (?:name|id)\b[^.]{0,20}?\b(?:error|mismatch\w*|is wrong|"
        r"not recogni[sz]ed|not (?:found|accepted)|does(?: not|n't) exist)\b|"
        r"(?:API|接口|调用|请求|服务)[^。]{0,20}?(?:找不到|不存在)[^。]{0,6}?(?:模型|名字|名称|model)|模型(?:名|名称|名字)[^。]{0,10}?(?:错误|不存在|找不到|不对|不一致)", re.I)),
    # the model parameter missing, in Chinese (model参数缺失 "the model parameter is missing", 必须要模型名称)
    ("access.model_id_missing", re.compile(r"(?:model|模型)\s?(?:参数|名称|名字)\s?(?:缺失|为空|丢失|没有)|(?:缺少|缺失|没有)\s?(?:model|模型)\s?(?:参数|名称|名字)", re.I)),
    ("access.model_id_missing", re.compile(r"\b(?:no|missing|empty) model (?:id|name)\b|\bmodel (?:id|name|parameter|field) (?:is )?(?:missing|empty|required|not set)\b", re.I)),
    # the base URL's path: a missing or doubled /v1, a chat path pasted in
    ("access.base_url_invalid", re.compile(
        r"/v1/v1\b|\b(?:wrong|incorrect|invalid|malformed|bad) (?:api[ _-]?)?base[ _-]?url\b|\bbase[ _-]?url\b[^.]{0,40}?\b(?:without|missing|lacks?|"
        r"doubled?|wrong|incorrect|invalid|needs?)\b[^.]{0,20}?(?:/v1|path)?|\bmissing (?:the )?[`'\"]?/v1\b|"
        # the base URL by its other names (api_base, baseURL, OPENAI_API_BASE, the endpoint URL) and its /v1 missing or doubled
        r"\b(?:wrong|incorrect|invalid|malformed|bad) (?:api[ _-]?base|baseURL|endpoint(?: URL)?|OPENAI_(?:API_)?BASE(?:_URL)?)\b|"
        r"\b(?:api[ _-]?base|baseURL|OPENAI_(?:API_)?BASE(?:_URL)?|endpoint URL)\b[^.]{0,40}?\b(?:without|missing|lacks?|doubled?|wrong|incorrect|invalid)\b|"
        r"\b(?:without|missing|lacks?|doubled?|duplicated?|extra|twice)\b[^.]{0,12}?[`'\"]?/v1\b[`'\"]?[^.]{0,40}?\b(?:404|not found|fail\w*|error)\b|"
        r"\b(?:404|not found)\b[^.]{0,40}?\b(?:without|missing|lacks?|doubled?|duplicated?|extra|twice)\b[^.]{0,12}?[`'\"]?/v1\b", re.I)),
    # the base URL and the 404 it gets ("setting OPENAI_BASE_URL to http://host:port/v1 ... results in 404"), a /v1 the server
    # does not use, a base URL "not correct"; in Chinese (没有/v1路径，会404 "no /v1 path, gives 404", 缺失/v1)
    ("access.base_url_invalid", re.compile(
        r"\b(?:base[ _-]?url|api[ _-]?base|baseURL|OPENAI_(?:API_)?BASE(?:_URL)?)\b[^.]{0,120}?\b(?:404|not found)\b|"
        r"\b(?:base[ _-]?url|api[ _-]?base|baseURL)\b[^.]{0,20}?\b(?:is |was )?not (?:correct|right|valid)\b|"
        r"\b(?:does|do)(?: not|n't) (?:use|have|need|support) (?:the )?[`'\"]?/v1\b[^.]{0,60}?\b(?:404|not found|fail\w*|error)\b|"
        r"(?:没有|缺少|缺失|少了|不带|不携带|多了|重复)[^。]{0,4}?/v1|/v1[^。]{0,6}?(?:重复|多余|缺失)", re.I)),
    # one protocol asked of a server that speaks the other ("It tries to connect to a Claude endpoint when it should use
    # OpenAI compatible endpoints", "Claude code does not work with vLLM")
    ("access.protocol_mismatch", re.compile(
        r"\b(?:Claude|Anthropic|OpenAI)(?:[- ]compatible)? (?:endpoints?|API|format)\b[^.]{0,40}?\b(?:when it should|instead of|rather than)\b[^.]{0,30}?"
        r"\b(?:OpenAI|Anthropic|Claude)\b|\bClaude[- ]Code\b[^.]{0,20}?(?:does(?: not|n't)|do(?: not|n't)|won'?t|can(?:not|'t)) work with "
        r"(?:vLLM|SGLang|Ollama|llama\.cpp|llama-server|LM Studio|TGI|LMDeploy|an? OpenAI)", re.I)),
    # an OpenAI-style client at an Anthropic-style endpoint or the reverse
    ("access.protocol_mismatch", re.compile(
        r"\b(?:OpenAI|Anthropic)[- ](?:style|compatible|format|API|SDK|client|protocol)\b[^.]{0,80}?\b(?:Anthropic|OpenAI|/v1/messages|/chat/completions)\b"
        r"[^.]{0,60}?" + _FAIL + r"|\b(?:/v1/messages|/chat/completions)\b[^.]{0,40}?\b(?:instead of|not|404)\b|"
        # "there is no `/v1/messages` handler", "they speak different wire formats", "the format mismatch is at the API level"
        r"\bno [`'\"]?(?:POST )?/v1/(?:messages|chat/completions)[`'\"]? (?:handler|endpoint|route|API)\b|"
        r"\bdifferent (?:wire|API|request) formats?\b|\b(?:wire|API) format mismatch\b|\bformat mismatch is at the API\b", re.I)),
    # 200 with the wrong shape: no `choices`, null content, a missing finish_reason, HTML instead of JSON
    # a body said to lack what the client reads ("response never contains any choices", "it doesn't contain content", "an
    # empty list of choices", "the choices field ... is null")
    ("access.response_invalid", re.compile(
        r"\b(?:never|does ?n[o']t|do ?n[o']t|did ?n[o']t|not) (?:contain|include|have|return)s? (?:any )?[`'\"]?(?:choices|content|message|delta|finish_reason|usage)\b|"
        r"\bempty (?:list|array) of [`'\"]?(?:choices|messages)\b|\b(?:choices|content|finish_reason)\b[`'\"]? (?:field|array|key)\b[^.]{0,30}?\b(?:is|was|are) "
        r"(?:missing|null|None|empty)\b", re.I)),
    ("access.response_invalid", re.compile(
        r"\b(?:missing|no|without|null|empty|none) [`'\"]?(?:finish_reason|choices|usage|message|content|delta|tool_calls)\b|"
        r"\b(?:finish_reason|choices|content)\b[`'\"]?\s?(?:is |are |was )?(?:missing|null|None|empty)\b|"
        r"\b(?:response|body|output)\b[^.]{0,30}?\b(?:is |was )?(?:not (?:valid )?JSON|HTML|malformed|unparseable|invalid JSON)\b|\bJSONDecodeError\b", re.I)),
    # a gateway that gave up waiting (504 Gateway Timeout, Cloudflare's 524 "A timeout occurred"): the request was
    # accepted and no answer came in time, whatever 5xx class a client wraps it in (checks/access/client_log.py)
    # a gateway's 504/524 said as a status (after a word that names one, or before one), never the number in a pasted list
    # (vLLM's start-up config dump holds "cudagraph_capture_sizes":[512,504,496,...])
    ("access.timeout", re.compile(r"\b(?:an?|the|HTTP|status(?: code)?|code|error|got|gets?|getting|returns?|returned|returning|with|in|throws?)\s+"
                                  r"(?:an?\s+)?(?:504|524)\b|\b(?:504|524)\s+(?:errors?|status|Gateway|Time-?out|responses?|from)\b|"
                                  r"\bGateway Time-?out\b|\bgateway timed out\b|\bA timeout occurred\b", re.I)),
    # "Request timed out", ReadTimeout, APITimeoutError: an answer that never came (before the 5xx a wrapper reports it as)
    ("access.timeout", re.compile(
        r"\b(?:request|requests|call|calls|API|client|response|read)\b[^.]{0,40}?\b(?:time[sd]? ?out|timeout)\b|\bReadTimeout\b|\bAPITimeoutError\b|"
        r"\btimeout error\b", re.I)),
    # an answer that did not come in time, said with any subject ("the generation keeps timing out", "it times out after 60s",
    # "fails with a timeout"), unless the sentence is about what the load layer and the network name their own timeouts for:
    # loading or starting the engine (load.startup_timeout), NCCL, a health probe, a download, a TCP connect (connect_failed)
    ("access.timeout", re.compile(
        r"^(?!.*\b(?:load\w*|start(?:s|ed|ing|up)?|boot\w*|NCCL|health[ -]?check\w*|readiness|liveness|probe|warm ?up|connect\w*|"
        r"download\w*|pull\w*|compil\w*|captur\w*|handshake)\b).*?(?:\btim(?:es|ed|ing) ?out\b|\btime out\b|"
        r"\b(?:gets?|got|getting|hits?|hitting|ends? (?:in|with)|ended (?:in|with)|fails? with|failed with|throws?|threw|raises?|raised)"
        r" (?:a |an |the |lots of |many |frequent |constant )?(?:\w+ )?timeouts?\b|\btimeouts? (?:exceeded|reached|occur\w*|happen\w*|expired)\b|"
        # a client that waited and gave up ("it seems to wait Ollama for 5-10 seconds to respond and gives up")
        r"\bwait\w*\b[^.]{0,60}?\b(?:gives?|gave|giving) up\b|\b(?:gives?|gave|giving) up (?:waiting|after \d)|"
        # "timeouts" as a verb ("it always timeouts after 300s")
        r"\b(?:always|often|sometimes|randomly|still|just|it|request|call) timeouts (?:after|at|when|on|for|every|with)\b)", re.I)),
    # the load named before the timeout that ended it ("the initial load of the model into Ollama times out"), and a
    # client that does not wait for it ("Librechat doesn't wait until Ollama has loaded model")
    ("load.startup_timeout", re.compile(
        r"\b(?:load(?:s|ed|ing)?|start(?:s|ing|up)?|start-up|boot\w*|warm ?up)\b(?! (?:test|balanc\w*))[^.]{0,60}?\b(?:tim(?:es|ed|ing) ?out|timeout)\b|"
        r"\b(?:does ?n[o']t|did ?n[o']t|won'?t|not) wait (?:until|for|till) (?:the )?(?:model|Ollama|server|engine|vLLM|SGLang|it)\b[^.]{0,30}?"
        r"\b(?:load\w*|ready|start\w*)\b", re.I)),
    # the same in Chinese and Japanese reports (请求超时 "the request timed out"), loading and start-up apart
    ("access.timeout", re.compile(r"^(?!.*(?:加载|加載|启动|啟動|載入|下载|下載|NCCL)).*?(?:超时|超時|逾时|逾時|タイムアウト)")),
    # 500/502/503, "Internal Server Error", "Bad Gateway"
    ("access.server_error", re.compile(
        r"\b(?:error|status|HTTP|code|returns?|returned|gets?|got)\W{0,3}50[0234]\b|\b50[0234]s?\b[^.]{0,20}?\b(?:error|response|from)\b|"
        r"\bInternal Server Error\b|\bBad Gateway\b|\bService Unavailable\b|\bGateway Time-?out\b", re.I)),
    # a bare 404 said in a person's words, with no word of the model (the rules above read those): the path the client posts
    # to is not served, the base URL's fault ("this error appears: 404", "it returns a 404"); an echoed error line ("Error
    # code: 404 - {...}", "Client error '404 Not Found' for url") is the catalogue's to read
    ("access.base_url_invalid", re.compile(
        r"\b(?:appears?|returns?|returned|returning|gives?|gave|giving|gets?|got|getting|throws?|shows?|showing|receiv(?:e|es|ed|ing))"
        r"[\s:]{1,3}(?:an?\s+|the\s+)?(?:HTTP\s+)?404\b(?!\s*[-{\[(])", re.I)),
    # --- load: the model loading and staying up -----------------------------------------------------
    # "requires you to execute the configuration file in that repo ... trust_remote_code=True" (transformers)
    ("load.remote_code", re.compile(
        r"\btrust[-_ ]remote[-_ ]code\b[^.]{0,80}?(?:\b(?:not|n't|never|ignored|missing|requires?|needs?|needed|required|must|without|lost|dropped)\b|" + _FAIL + r")|"
        # the flag said not to reach the engine, in Chinese (trust_remote_code=True 没有有效传递 "was not passed on")
        r"\btrust[-_ ]remote[-_ ]code\b[^。]{0,40}?(?:没有|未|无效|不生效|失效)|"
        # "Error running remote model that has custom code"
        r"(?:" + _FAIL + r")[^.]{0,60}?\b(?:has|have|contains?|with) (?:its own )?custom (?:model(?:ing)? )?code\b|"
        r"\b(?:requires?|needs?|without|missing|not (?:passed|forwarded|set))\b[^.]{0,40}?\btrust[-_ ]remote[-_ ]code\b|"
        r"\b(?:custom|remote) (?:model(?:ing)? )?code\b[^.]{0,40}?\b(?:not (?:trusted|allowed|loaded)|requires?)\b", re.I)),
    # "Model architectures [...] are not supported for now", "does not recognize this architecture",
    # "model type `x` ... Transformers does not recognize", "requires transformers>=", "please upgrade"
    ("load.engine_outdated", re.compile(
        r"\b(?:architecture|model[ _]type|arch)\b[^.]{0,60}?\b(?:(?:is |are )?not (?:yet )?(?:supported|recogni[sz]ed|known)|unsupported|unknown|"
        r"unrecogni[sz]ed|(?:does|did|do|can)(?: not|n't) (?:recogni[sz]e|support|know))\b|"
        r"\b(?:does|did|do|can)(?: not|n't) (?:recogni[sz]e|support) (?:this|the|my|that|new|newer)? ?(?:model'?s? )?(?:architecture|model[ _]type|arch)\b|"
        r"\b" + ENGINES + r"\b[^.]{0,30}?\b(?:is |are |was )?(?:too old|outdated|out of date)\b|\b(?:too old|outdated|older|lower) (?:version of )?" + ENGINES + r"\b|"
        r"\blower version of " + ENGINES + r"\b|\b(?:requires?|needs?) (?:a )?(?:newer|more recent|later) (?:version of )?" + ENGINES + r"|"
        r"\b(?:requires?|needs?) (?:a )?(?:newer|more recent|later) version\b(?! of (?:the )?(?:NVIDIA |CUDA )?(?:driver|CUDA|torch|PyTorch))|"
        r"\b" + ENGINES + r"\b[^.]{0,20}?\bversion\b[^.]{0,30}?\b(?:too old|too low|not (?:new|recent) enough)\b|"
        r"\bnot supported by (?:the )?(?:current |this |installed )?(?:version of )?" + ENGINES + r"\b|"
        r"\bunsupported (?:model )?(?:architecture|model[ _]type|arch)s?\b|\bnot (?:yet )?(?:supported|accepted|recogni[sz]ed) (?:yet )?by " + ENGINES + r"\b", re.I)),
    # the engine named too old in Chinese (提示需要升级transformers "it says transformers must be upgraded", 版本太低), or not
    # supporting the model (GLM-4v不支持turbomind推理引擎 "GLM-4v is not supported by the turbomind engine")
    ("load.engine_outdated", re.compile(
        r"不支持\s?(?:turbomind|lmdeploy|vllm|sglang|transformers|llama\.cpp|ollama)|(?:turbomind|lmdeploy|vllm|sglang)\b[^。]{0,20}?(?:支持不了|无法支持)", re.I)),
    ("load.engine_outdated", re.compile(
        r"(?:需要|要求|请|必须)(?:升级|更新)\s?(?:transformers|vllm|sglang|lmdeploy|ollama|llama\.cpp|tensorrt-llm)|"
        r"(?:transformers|vllm|sglang|lmdeploy|ollama|llama\.cpp)\s?(?:的)?(?:版本)?(?:太低|过低|过旧|太旧)", re.I)),
    # "Total number of attention heads (x) must be divisible by tensor parallel size (y)"
    ("load.tp_invalid", re.compile(
        r"\b(?:heads?|num_heads|num_key_value_heads|vocab\w*|layers?|tp|tensor[ _-]?parallel\w*|tp_size|GPUs?)\b[^.]{0,60}?"
        r"\b(?:not (?:evenly )?divisible|indivisible|(?:does|do|did)(?: not|n't) divide|must (?:be divisible|divide)|cannot be divided)|"
        r"(?:不整除|无法整除|不能整除)|\b(?:MPI|world) size \d+ ?!= ?TP size\b", re.I)),
    # the kernel's own OOM-killer lines (mm/oom_kill.c "Out of memory: Killed process %d (%s)", "%s invoked oom-killer",
    # mm/memcontrol.c "Memory cgroup out of memory"), pasted without their dmesg timestamp: the host's, never the GPU's
    ("load.host_oom", re.compile(r"\bKilled process \d+ \(|\binvoked oom-killer\b|\bMemory cgroup out of memory\b", re.I)),
    # the host's memory named before the GPU's OOM words below read it: "RAM OOM", "killed due to high memory usage",
    # "killed by the host due to OOM" (a CUDA OOM raises an error, it kills nothing)
    ("load.host_oom", re.compile(
        r"\b(?:RAM|host|system|CPU)[- ]OOM\b|\bkilled\b[^.]{0,40}?\b(?:due to|because of)\b[^.]{0,30}?\b(?:(?:high |excessive )?memory usage|"
        r"(?<!CUDA )(?<!GPU )OOM|(?<!CUDA )(?<!GPU )out of memory)\b", re.I)),
    # the OOM killer named with any word order ("getting oom kills", "killed by OOM killer", OOM异常，自动kill程序了 "OOM, the
    # program was killed"): a CUDA OOM raises an error and kills nothing; RAM in Chinese is 内存 (the GPU's is 显存)
    ("load.host_oom", re.compile(
        r"\bOOM[- ]?kill(?:er|ed|s|ing)?\b|\bOOMKilled\b|\bkilled by (?:the )?(?:kernel'?s? |linux )?OOM\b|\bOOM\b[^.。]{0,20}?\bkill(?:ed|s)?\b|"
        r"(?<!GPU)(?<!显卡)(?<!CUDA)(?<!设备)(?<!共享)内存(?:不足|不够|溢出|爆了|耗尽)|(?:进程|程序|服务)[^。]{0,6}?被(?:系统)?(?:kill|杀)", re.I)),
    # a second instance or model on the GPU one already holds, said with what went wrong ("cannot startup two Qwen2.5-0.5B on a 8G
    # 4060ti", "vllm failed to run two instance with one gpu", "the second process will fail", "loading two models into the same
    # GPU the second model requires more memory")
    ("load.gpu_memory_occupied", re.compile(
        r"\b(?:cannot|can't|could ?n[o']t|unable to|fail(?:s|ed)? to|not possible to)\b[^.]{0,20}?\b(?:start\w*|run|load|launch|serve|share)\b[^.]{0,30}?"
        r"\b(?:two|2|multiple|several|a second|another|more than one)\b[^.]{0,40}?\b(?:instances?|models?|servers?|processes|copies|Qwen\S*|Llama\S*)|"
        r"\b(?:second|another|2nd) (?:identical )?(?:instance|model|process|server|vLLM|copy)\b[^.]{0,60}?(?:" + _FAIL + r"|\brequires? more memory\b)|"
        r"(?:" + _FAIL + r")[^.]{0,30}?\b(?:a |the )?(?:second|another|2nd) (?:identical )?(?:instance|model|process|server|vLLM|copy)\b|"
        r"\b(?:two|2|multiple|several|more than one) (?:\w+ )?(?:instances?|models|servers|processes)\b[^.]{0,20}?\b(?:on|in|into) (?:the same|one|a single) (?:GPU|card|device)\b"
        r"[^.]{0,60}?(?:" + _FAIL + r"|\brequires? more memory\b)", re.I)),
    # GPU memory held by another instance on the same card, in Chinese (第四个实例因显存不够启动失败 "the fourth instance
    # fails to start for lack of GPU memory", 显存被占用 "GPU memory is occupied")
    ("load.gpu_memory_occupied", re.compile(
        r"(?:多个|第\s?[二三四五六七八九十\d]+\s?个|另一个|其他|其它)(?:模型|实例|进程|服务)[^。]{0,30}?(?:显存|OOM|启动失败)|显存(?:已)?被[^。]{0,10}?占(?:用|满)|"
        r"(?:其他|其它|别的)进程[^。]{0,10}?占用", re.I)),
    # the context named with the OOM or the KV cache it overflows ("OutOfMemoryError when loading a small model with a huge
    # context length", "the length of a single sequence is larger than the system's KV cache size", llama.cpp's "Input
    # prompt is too big compared to KV size")
    ("load.kv_cache_insufficient", re.compile(
        r"(?:\bOOM\b|\bOutOfMemoryError\b|\bout of memory\b)[^.]{0,60}?\b(?:huge|large|long|big|high|full) (?:context|max[-_ ]model[-_ ]len|sequence length)\b|"
        r"\b(?:huge|large|long|big|high|full) (?:context|max[-_ ]model[-_ ]len|sequence length)\b[^.]{0,60}?(?:\bOOM\b|\bout of memory\b)|"
        r"\b(?:sequence|context|prompt|input)(?: length)?\b[^.]{0,40}?\b(?:larger|greater|longer|bigger|exceeds?)\b[^.]{0,40}?\bKV[ -]?cache\b|"
        r"\b(?:prompt|input|context)\b[^.]{0,30}?\btoo (?:big|large|long)\b[^.]{0,30}?\bKV\b", re.I)),
    # GPU memory too small for the weights, as people say it ("doesn't have enough GPU memory to fit a model with 13B
    # parameters", "the model is too big for my GPU")
    ("load.weights_oom", re.compile(
        r"(?:\bnot|n't) (?:have )?enough (?:GPU |CUDA |video |device )?(?:memory|VRAM)\b[^.]{0,20}?\bto (?:fit|load|run|hold|host)\b|"
        r"\b(?:model|weights)\b[^.]{0,30}?\b(?:is |are )?too (?:big|large) (?:for|to fit (?:in|on|into)) (?:the |my |a |this |one )?(?:GPU|VRAM|card)\b|"
        r"\b(?:model|weights)\b[^.]{0,20}?\b(?:cannot|can't|could ?n[o']t) (?:be )?(?:fit|fitted|loaded) (?:in|on|into) (?:the |my |a )?(?:GPU|VRAM)\b", re.I)),
    # GPU memory that runs out in Chinese (显存不足 "not enough GPU memory", 爆显存): at start-up or load, else while serving
    ("load.weights_oom", re.compile(r"(?:启动|加载|載入|载入|部署)[^。]{0,30}?(?:显存(?:不足|不够|溢出|爆)|爆显存)|(?:显存(?:不足|不够|溢出|爆)|爆显存)[^。]{0,30}?(?:启动|加载|载入|部署)")),
    ("load.runtime_oom", re.compile(r"显存(?:不足|不够|溢出|爆了|耗尽)|爆显存")),
    ("load.runtime_oom", re.compile(r"\b(?:crash\w*|fail\w*|die[sd]?)\b[^.]{0,30}?\b(?:allocat\w*|us\w*) too much (?:GPU |CUDA |V)?(?:memory|RAM)\b", re.I)),
    # OOM told with its phase: at weight load (load.weights_oom) or while serving requests (load.runtime_oom)
    ("load.weights_oom", re.compile(
        r"\b(?:OOM|out of (?:GPU |CUDA |device )?memory)\b[^.]{0,40}?\b(?:while|when|during|at) (?:loading|load|startup|start-up|initiali[sz]\w+)|"
        r"\b(?:model|weights)\b[^.]{0,30}?\b(?:does|do|did|will|would)(?: not|n't) fit\b[^.]{0,30}?\b(?:GPU|VRAM|memory|card)", re.I)),
    ("load.runtime_oom", re.compile(
        r"\b(?:OOM|out of (?:GPU |CUDA |device )?memory)\b[^.]{0,60}?\b(?:during|under|while|when|after)\b[^.]{0,20}?\b(?:inference|serving|requests?|"
        r"generat\w+|decod\w+|prefill|load test|concurren\w+|long (?:prompts?|context))\b", re.I)),
    # GPU memory that runs out with no phase named: at load when the sentence speaks of loading or offloading the
    # model (llama.cpp's "unable to allocate CUDA0 buffer" at start), else while serving
    ("load.weights_oom", re.compile(
        OOM + r"[^.]{0,80}?\b(?:boot\w*|loading|load(?:s|ed)? (?:the )?(?:model|weights)|start(?:s|ed|ing)? (?:up|the (?:model|server|engine))|launch\w*|"
        r"offload\w*|weights)\b|\b(?:loading|offload\w*|weights)\b[^.]{0,60}?" + OOM, re.I)),
    # the load named before the shortage ("Can't load Mistral-Nemo, Insufficient VRAM for model and cache"), not the serving
    # load ("under heavy load", "a load test"); a model's size against the card's ("vram over-load on 20GB model on 16GB VRAM")
    ("load.weights_oom", re.compile(
        r"(?<!under )(?<!heavy )(?<!high )\bload(?:s|ed|ing)?\b(?! test| balanc)[^.]{0,60}?(?:" + OOM + r"|\binsufficient VRAM\b)|"
        r"(?=.*(?:\bOOM\b|out of memory|over-?load|\bnot fit|n't fit|too (?:big|large)|insufficient|not enough))"
        r".*\b\d+(?:[.·]\d+)? ?(?:GB|B) model\b[^.]{0,30}?\b(?:on|in|into|with) (?:a |an |my |the |only )?(?:\w+ ){0,2}?\d+ ?GB\b", re.I)),
    # the start named before the OOM it ends in ("start demo script will result out of memory", "can't start with cuda error
    # Out of Memory"), unless requests come between (the first request after the start OOMs while serving)
    ("load.weights_oom", re.compile(
        r"\b(?:start(?:s|ed|ing|up)?|launch\w*|boot\w*)\b(?:(?!request|prompt|inferenc|serving|generat|decod|concurren|batch)[^.]){0,40}?" + OOM, re.I)),
    ("load.runtime_oom", re.compile(OOM, re.I)),
    # "max seq len (x) ... larger than the maximum number of tokens that can be stored in KV cache"
    ("load.kv_cache_insufficient", re.compile(
        r"\bmax[-_ ]?(?:model|seq)[-_ ]len\w*\b[^.]{0,60}?\b(?:larger|greater|more|exceeds?)\b[^.]{0,40}?\bKV[ -]?cache\b|"
        r"\bKV[ -]?cache\b[^.]{0,30}?\btoo small (?:for|to hold)\b", re.I)),
    ("load.no_kv_cache_memory", re.compile(r"\bno (?:available )?memory for (?:the )?cache blocks\b|\bnum_gpu_blocks\b[^.]{0,20}?\b(?:0|zero|negative)\b", re.I)),
    # free memory below the requested share: other processes hold it, or it is not freed
    ("load.gpu_memory_occupied", re.compile(
        # a process that outlived its server holds the memory: people call it a zombie, orphaned, stale, leftover
        r"\b(?:other|another|previous|old|zombie|orphan(?:ed)?|stale|left-?over|lingering|defunct|dangling) (?:\S+ ){0,2}?process(?:es)?\b"
        r"[^.]{0,40}?\b(?:hold\w*|us(?:e|es|ing)|occup\w*|tak\w*|keep\w*)\b[^.]{0,20}?\b(?:GPU|VRAM|memory)|"
        r"\b(?:GPU |VRAM |device )?memory (?:is |was )?(?:not (?:freed|released)|never (?:freed|released)|still (?:occupied|in use|held))\b|"
        r"\bfree memory\b[^.]{0,40}?\b(?:less|lower|smaller) than (?:the )?(?:desired|requested)", re.I)),
    # "CUDA driver version is insufficient for CUDA runtime version", "no kernel image is available"
    ("load.cuda_mismatch", re.compile(
        r"\b(?:CUDA|driver|cuDNN|torch|PyTorch|TensorRT|TRT-?LLM)\b[^.]{0,40}?\bversions?\b[^.]{0,60}?\b(?:mismatch\w*|incompatib\w+|not compatible|"
        r"(?:does|do)(?: not|n't) match|too old|insufficient)|\b(?:mismatch|incompatib\w+)\b[^.]{0,40}?\b(?:CUDA|driver|torch|TensorRT|TRT-?LLM)\b[^.]{0,30}?\bversions?\b|"
        r"\b(?:built|compiled|installed) (?:with|for|against) CUDA ?\d+(?:[.·]\d+)?\b[^.]{0,60}?\b(?:while|but|whereas|however)\b[^.]{0,40}?\bCUDA\b|"
        r"\bno kernel image\b|\b(?:NVIDIA |CUDA )?driver (?:is )?too old\b|\bcompiled (?:with|for|against) (?:a )?(?:different|newer|older) CUDA\b", re.I)),
    # bf16/FP8 and half precision in Chinese reports (需要支持半精度 "needs half-precision support", V100不支持BF16)
    ("load.dtype_unsupported", re.compile(r"(?:bf16|bfloat16|fp8|半精度)[^。]{0,20}?(?:不支持|报错|无法|失败)|(?:不支持|无法使用|报错|错误|失败)[^。]{0,12}?(?:bf16|bfloat16|fp8|半精度)|"
                                          r"\b(?:bfloat16|bf16|FP8|float8)\b[^.]{0,50}?\bnot natively supported\b", re.I)),
    ("load.dtype_unsupported", re.compile(
        r"\b(?:bfloat16|bf16|FP8|float8)\b[^.]{0,50}?\b(?:not supported|unsupported|only supported|requires? compute capability)\b[^.]{0,40}?\b(?:GPU|card|compute capability|V100|T4|Turing|Volta|Pascal)?", re.I)),
    # a quantized checkpoint that cannot run ("awq cannot run on gpu v100", "an error due to quantization", vLLM's "Unknown
    # quantization method: gptq")
    ("load.quantization_unsupported", re.compile(
        r"\b(?:quantiz\w+|AWQ|GPTQ|NVFP4|MXFP4|bitsandbytes|marlin|EXL2)\b[^.]{0,40}?\b(?:cannot|can't|could ?n[o']t|unable to|fails? to|won'?t) "
        r"(?:run|load|work|be (?:used|loaded))\b|\b(?:error|fail\w*|crash\w*)\b[^.]{0,30}?\b(?:due to|because of) (?:the )?quantiz\w+|"
        r"\bunknown quantiz\w* (?:method|scheme|type|config)\b", re.I)),
    ("load.quantization_unsupported", re.compile(
        r"\b(?:quantiz\w+|quant_method|AWQ|GPTQ|NVFP4|MXFP4|bitsandbytes|marlin|EXL2|GGUF quant\w*)\b[^.]{0,50}?\b(?:not supported|unsupported|"
        r"(?:does|do|is)(?: not|n't) (?:support\w*|work\w*)|mismatch\w*)\b", re.I)),
    # /dev/shm named with what a container gives it (Docker's 64 MB default, "shm is full", `--shm-size` failing; not
    # "I already raised --shm-size", which says what was tried); a bare "shared memory" is also the GPU's on-chip
    # memory (Triton's "out of resource: shared memory"): it needs words of its own (torch's "out of shared memory")
    # shared memory said to be short, the shortage named first ("Insufficient Shared Memory (/dev/shm)", "fails due to
    # insufficient /dev/shm size"), in Chinese 共享内存不足
    ("load.shm_insufficient", re.compile(
        r"\b(?:insufficient|not enough|too little|too small|limited)\b[^.]{0,10}?(?:\bshared memory\b|/dev/shm\b|\bshm\b)|共享内存(?:不足|不够|太小|过小)", re.I)),
    ("load.shm_insufficient", re.compile(
        r"(?:/dev/shm|\bshm)\b[^.]{0,40}?\b(?:too small|too low|full|64 ?MB?|insufficient|exhausted|not enough|r[au]n out)\b|"
        r"\bshared memory\b[^.]{0,20}?\b(?:too small|insufficient)|\bout of shared memory\b|--shm-size\b[^.]{0,40}?" + _FAIL, re.I)),
    ("load.host_oom", re.compile(
        r"\bOOM[- ]?kill\w*|\bOOMKilled\b|\bkilled by the (?:kernel|OOM)\b|\bexit (?:code|status) 137\b|\b(?:system|host|CPU) (?:RAM|memory)\b[^.]{0,30}?"
        r"\b(?:runs? out|ran out|full|exhausted|not enough)\b|"
        # RAM alone is the host's (a GPU's is VRAM): "my RAM fills up", "runs out of RAM", "not enough RAM"
        r"\bRAM\b[^.]{0,30}?\b(?:fills? up|filled up|full|exhausted|r[au]ns? out|maxe[sd] out|spikes? to 100 ?%)|"
        r"\b(?:r[au]n(?:s|ning)?|running) out of (?:system |host |CPU )?RAM\b|\b(?:not enough|insufficient) (?:system |host |CPU )?RAM\b", re.I)),
    ("load.nccl_failed", re.compile(r"\bNCCL\b[^.]{0,40}?(?:\b(?:timeout|timed out|hangs?|hung|stuck)\b|" + _FAIL + ")", re.I)),
    # the hang named first ("vLLM hang at nccl step"), and a multi-GPU start that hangs ("Multi-GPU AMD Setup Hangs",
    # "tensor parallel 2 hang"): the distributed init is where a start with several GPUs waits
    ("load.nccl_failed", re.compile(
        r"\b(?:hang\w*|hung|stuck|freez\w*|deadlock\w*|time[sd]? ?out|timeout)\b[^.]{0,30}?\bNCCL\b|"
        r"\b(?:multi-?GPU|multiple GPUs|multi-?node|tensor[ _-]?parallel\w*|tensor-parallel-size|tp_size|TP ?[>=]+ ?\d)\b[^.]{0,40}?"
        r"\b(?:hang(?:s|ing)?|hung|stuck|freez\w*|deadlock\w*)\b|"
        # a start that fails only with several GPUs ("Failing to start a TGI pod with 2 or more GPUs")
        r"\b(?:fail\w*|cannot|can't|unable) to start\b[^.]{0,40}?\b(?:with|on|across) (?:\d+ or more|multiple|several|\d+) GPUs\b", re.I)),
    ("load.gpu_not_visible", re.compile(
        r"\b(?:no|not|n't|cannot|can't)\b[^.]{0,20}?\b(?:detect\w*|see|sees|find|finds|found|visible|available)\b[^.]{0,20}?\b(?:any )?GPUs?\b|"
        r"\b(?:GPUs?|CUDA(?: devices?)?)\b[^.]{0,20}?\b(?:is |are )?not (?:detected|visible|found|available|used|recogni[sz]ed)\b|"
        # torch's "No CUDA GPUs are available" and vLLM's "Failed to infer device type" said in a title
        r"\bno (?:CUDA |NVIDIA |AMD |ROCm )?GPUs? (?:are |is |were )?(?:available|found|detected|visible)\b|\bfail(?:s|ed)? to infer (?:the )?device type\b|\bfall(?:s|ing)? back to (?:the )?CPU\b|"
        # the engine said to run on the CPU instead ("does not use my GPU", "runs on CPU only", "only uses the CPU")
        r"\b(?:does ?n[o']?t|do ?n[o']?t|won'?t|never|is ?n[o']?t|not) (?:use|using|utili[sz]e|utili[sz]ing|run(?:ning)? on) (?:my |the |any )?GPUs?\b|"
        r"\brun(?:s|ning)? (?:only )?on (?:the )?CPU only\b|\bonly (?:uses?|using) (?:the )?CPU\b|"
        r"\b(?:unable|fail(?:s|ed)?|fail) to (?:find|detect|use|utili[sz]e|init\w*|access|recogni[sz]e|see)(?:\s+(?:the|my|a|any|its|NVIDIA|AMD|CUDA|discrete|dedicated))*\s+GPUs?\b|"
        r"\b(?:model|models|ollama|inference|llama\.cpp|llama-server|vLLM|SGLang|engine|everything|layers)\b[^.]{0,40}?\b(?:still |only |always |just |all |entirely |completely )?"
        r"(?:uses?|using|runs?|running|ran|loaded|loads?|loading|execut\w*) (?:on |onto |in |into )?(?:the )?CPU\b(?!\s*(?:offload|threads?|cores?|RAM|memory|usage|"
        r"utili[sz]ation|bound|time|and (?:the )?GPU))|"
        r"\bCUDA (?:is |was )?not (?:available|detected|visible)\b|\bis_available\(\)\W{0,3}(?:returns? )?False\b|"
        # the CUDA unified-memory module (nvidia_uvm) reloaded as the cure: without it cuInit fails (ollama discover/gpu.go's
        # "cuda driver library init failure: 999") and the engine runs on the CPU
        r"\b(?:rmmod|modprobe|reload\w*|unload\w*)\b[^.\n]{0,30}?\bnvidia[_-]uvm\b|\bnvidia[_-]uvm\b[^.]{0,30}?\b(?:not loaded|missing|reload\w*)\b", re.I)),
    # an ECC error said to happen, not nvidia-smi -q's "ECC Errors" section header over its (zero) counts
    ("load.gpu_fault", re.compile(r"\bXid\b|\bf(?:allen|ell|alls?|alling) off (?:of )?the (?:PCIe |PCI )?bus\b|\buncorrect(?:able|ed) ECC error|"
                                  r"\bECC errors?\b[^.]{0,30}?\b(?:detected|encountered|occurr\w*|found|reported|appear\w*|happen\w*)\b|"
                                  r"\b(?:got|get|gets|getting|see|saw|seeing|hit|hits|have|has|had|with|throws?|threw)\s+"
                                  r"(?:an?\s+|many\s+|some\s+|\d+\s+)?(?:uncorrectable\s+|double[- ]bit\s+)?ECC errors?\b", re.I)),
    ("load.startup_timeout", re.compile(
        r"\b(?:readiness|liveness|startup|start-up) probes?\b[^.]{0,30}?(?:\bkill\w*|" + _FAIL + r")|\b(?:time[sd]? ?out|timeout)\b[^.]{0,30}?\b(?:while |during )?"
        r"(?:loading|startup|start-up|warm ?up)\b|\btakes? too long to (?:load|start)\b|"
        # the load named first: "when loading a model takes too long, k8s thinks the server hangs and restarts it"
        r"\b(?:loading|starting)\b[^.,]{0,30}?\b(?:takes?|took|taking) too long\b", re.I)),
    # the kubelet's kill told from the pod's side (kuberuntime_manager.go "Container %s failed liveness probe, will be
    # restarted"): "pods are killed by liveness probes before model loading completes", "restarted by the startup probe",
    # "the container is terminated before the model finishes loading"
    ("load.startup_timeout", re.compile(
        r"\b(?:kill\w*|terminat\w*|restart\w*)\b[^.]{0,20}?\bby (?:the |its |their |a |the kubelet'?s? )?(?:HTTP |TCP |gRPC )?"
        r"(?:readiness|liveness|startup|start-up|health) ?(?:probes?|checks?)\b|"
        r"\b(?:kill\w*|terminat\w*|restart\w*)\b[^.]{0,40}?\bbefore (?:the )?(?:model|weights?|engine|server|it|vLLM|SGLang|TGI)\b"
        r"[^.]{0,20}?\b(?:load\w*|download\w*|is ready|becomes? ready|finish\w* (?:load\w*|start\w*)|(?:is |has )?(?:loaded|started))\b|"
        # the probes told to run too early (the kubelet starts probing after initialDelaySeconds, whatever the load): "HTTP
        # startup and liveness probes call port 8000 before that happens", "the readiness probe checks before vLLM is up"
        r"\b(?:readiness|liveness|startup|start-up) probes?\b[^.]{0,20}?\b(?:call\w*|check\w*|hit\w*|start\w*|begin\w*|"
        r"run\w*|fire\w*|poll\w*)\b[^.]{0,40}?\bbefore\b|"
        # probes that kill the pod, a load longer than the probe's delay ("Probes for quickstart model kill pod", "models that
        # need longer than the initial delay get killed")
        r"\bprobes?\b[^.]{0,30}?\bkill\w*\b[^.]{0,10}?\b(?:pods?|containers?)\b|\b(?:needs?|needed|takes?|took)\b (?:longer|more time) than (?:the )?"
        r"(?:initial ?Delay\w*|timeout|probe\w*|deadline|startup)\b", re.I)),
    # the model's files: missing, gated (HF 401/403), a wrong path
    ("load.model_files", re.compile(
        r"\b(?:config\.json|safetensors|weights?|checkpoint|tokenizer(?:\.json|_config\.json)?|model (?:files?|path|directory|folder))\b[^.]{0,40}?"
        r"\b(?:not found|missing|does not exist|cannot be found|could not be found)\b|\bgated (?:repo|model)\b|\bNo such file or directory\b|"
        r"\b(?:can't|cannot|could ?n[o']t|unable to|fail\w* to) (?:find|locate|open|read)\b[^.]{0,40}?\b(?:config\.json|safetensors|tokenizer(?:\.json|_config\.json)?|"
        r"weights|checkpoint|model (?:files?|path|directory|folder))\b|\bno (?:config\.json|tokenizer\.json|safetensors|model files?|weights? files?)\b[^.]{0,30}?"
        r"\b(?:created|found|present|saved|exists?)\b|\bdoes not (?:appear to )?have a file named\b|"
        r"模型文件[^。]{0,10}?(?:缺失|不存在|找不到|不完整)|漏下载|下载不完整", re.I)),
    ("load.config_invalid", re.compile(
        r"\bunrecogni[sz]ed arguments?\b|\bunknown (?:flag|argument|option)\b|\binvalid (?:value|argument|choice) for --|"
        r"\bmax[-_ ]model[-_ ]len\b[^.]{0,40}?\b(?:greater|larger|exceeds?)\b[^.]{0,30}?\b(?:model'?s?|derived|maximum|max_position)", re.I)),
)

# lower-case literals one of which each entry above needs: a line holding none is not read
LITERALS = ("/v1", "参数", "模型名", "不支持", "支持不了", "引号", "空格", "换行", "burst", "two", "second", "multiple", "升级", "版本", "lookup", "claude", "longer than", "半精度", "共享内存", "触发", "ssl", "certificate", "key", "bearer", "40", "quota", "billing", "credit", "afford", "auth", "524", "format", "accumulat", "x-accel",
            "stopped arriving", "bytes for", "timing out", "timed out", "times out", "time out", "超时", "超時", "逾时",
            "逾時", "タイムアウト", "流式", "payment", "429", "rate", "too many", "throttl", "certificate",
            "signed", "ssl", "tls", "x509", "wrong_version", "stream", "sse", "chunk", "token", "buffer", "proxy", "resolve",
            "resolution", "getaddrinfo", "enotfound", "eai_again", "name or service", "no such host", "dns", "connect", "no route",
            "model", "/v1", "base", "openai", "anthropic", "messages", "finish_reason", "choices", "usage", "content", "delta",
            "response", "body", "output", "json", "50", "server error", "gateway", "unavailable", "time", "trust", "remote",
            "custom", "arch", "old", "outdated", "out of date", "lower version", "newer", "recent", "later", "version",
            "not supported", "divis", "divide", "整除", "size", "oom", "out of", "fit", "kv", "cache", "memory", "cuda",
            "driver", "kernel image", "compiled", "bf16", "bfloat16", "fp8", "float8", "quant", "awq", "gptq", "fp4",
            "bitsandbytes", "marlin", "exl2", "shm", "shared memory", "killed", "137", "ram", "nccl", "gpu", "cpu",
            "is_available", "xid", "bus", "ecc", "probe", "too long", "config", "safetensors", "weight", "checkpoint",
            "gated", "no such file", "argument", "flag", "option", "max", "kill", "terminat", "restart", "hang", "hung", "stuck",
            "freez", "deadlock", "gives up", "gave up", "wait", "显存", "内存", "找不到", "不存在", "模型", "密钥", "令牌", "实例", "进程",
            "占用", "漏下载", "下载不完整", "没有", "无效", "不生效")

# a sentence that states no failure: a question about a setting, advice or a possibility, a fix already
# made, something healthy ("loads fine"); "why does it fail with ...?" still reports what it asks about
DIGIT_DOT = re.compile(r"(?<=\d)\.(?=\d)")
# Latin words written against Chinese ones ("OOM异常", "vllm部署"): \b sees no edge between them (both are word characters)
SCRIPT_EDGE = re.compile(r"(?<=[A-Za-z0-9])(?=[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9])")
QUESTION = re.compile(r"[?？]\s*$|[吗么嘛][?？]?\s*$|^(?:\[[^\]]{1,30}\]:?\s*)*(?:how|what(?! (?:I|we|happens|happened)\b)|is|are|does|do|can(?!['’]t)|could|"
                      r"should|would|will|any (?:idea|way)s?)\b", re.I)  # "What I can't understand is ..." states
COMPLAINT = re.compile(r"^\[?bug\]?:|\bwhy (?:is|are|does|do|did|am|would|can)\b|[,，]\s*why\s*[?？]+\s*$", re.I)  # "..., why?" complains
# advice is addressed to someone ("you could try", "consider", "to avoid"); an engine's message may carry
# its own ("make sure you have read the code", "see the docs"), which is no reason to drop the failure it states
ADVICE = re.compile(
    r"\b(?:(?<!says )(?<!said )(?<!told )(?:you|we|I) (?:will |would )?(?:can(?!'t|not)|could(?!n't)|should(?!n't)|might|may|need to|have to|must)"
    r"(?! (?:see|tell|notice)\b)|(?:it|this|that) (?:may|might|could|would) (?:be|help|work|fix)|"
    r"(?<!\bI )(?<!\bwe )(?<!\bthey )try (?:to|setting|using|adding|passing|with|running|lowering|raising|increasing|reducing|upgrading)|consider|recommend\w*|suggest\w*|"
    r"to (?:avoid|prevent|get rid of)|(?:avoid|prevent)ing|in case|if you\b|fix(?:es|ed)|resolv(?:es|ed)|solv(?:es|ed)|"
    r"(?:works|worked|loads|loaded|runs|ran|starts|started) (?:fine|well|great|correctly|successfully|now|as expected)|no (?:more |longer )|"
    r"successfully|add(?:s|ed|ing)? support|feature request|"
    # a possibility or a fix described: "buffering can prevent SSE ...", "disable buffering, ensuring ...", "allows you to"
    r"(?:can|may|might|could) (?:prevent|cause|lead to|result in)|(?:disabl(?:e|es|ing)|turn(?:s|ing)? off) (?:\w+ ){0,2}buffering|"
    r"ensur(?:e|es|ing)|allows? (?:you|us|users|clients) to|"
    # a run said to have passed without the failure ("survives the concurrent prefills with zero OOM"): a tuning result
    r"zero (?:OOMs?|crash(?:es)?)\b|without (?:an? |any )?(?:OOMs?|crash(?:es|ing)?)\b)", re.I)
# a change's title, a pull request's or a feature request's ("Avoid GPU OOM when loading large models", "support loading model
# without config.json file", "ENH: handle OOM during model loading", "feat: ..."): it names what the change does, not a failure
CHANGE = re.compile(r"^(?:(?:feat|fix|chore|docs?|refactor|test|ci|build|ENH|MAINT)(?:\([^)]*\))?!?:|(?:\[[^\]]{1,40}\]:?\s*)*"
                    r"(?:avoid|prevent|fix|handle|support|add|implement|allow|enable|deliver|increase|expose|document|improve|refactor|bump|"
                    r"respect|honou?r|update|raise|remove|trim|strip|disable|configure|return|use(?! of)|fail fast|please (?:add|support|implement|allow|consider))\b(?!:)|"
                    r"(?:增加|添加|新增|支持|希望|建议)[^。]{0,20}?(?:支持|功能))", re.I)
# a list of guesses a program appends whatever happened: Ray's "There are some potential root causes. (1) The process
# is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) ..." (raylet
# node_manager.cc, core_worker): its items are possibilities, not what happened
GUESSES = re.compile(r"\b(?:potential|possible|probable|likely) (?:root )?causes?\b|\bone of the following (?:causes|reasons)\b", re.I)
ENUMERATED = re.compile(r"^\(?\d{1,2}\)\s")
ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+\S")
FENCE = re.compile(r"^\s*(?:```|~~~)")
# a line a program printed: a timestamp, a `key=value, key=value` record, a prompt's command line
LEVEL_WORD = re.compile(r"^\W{0,2}(?:[\w:.\[\]-]+\s){0,2}(?:INFO|WARN|WARNING|ERROR|DEBUG|FATAL|CRITICAL)\b"  # a program's level, after its tag
                        # or in brackets after its bracketed tag: TurboMind's `[TM][INFO][0301.10:00:00.1][scheduler.cc:1186]`
                        # (lmdeploy src/turbomind/core/logger.cc), TensorRT-LLM's `[TensorRT-LLM][WARNING]`
                        r"|^\[[\w.-]+\]\[(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\]")
# a C function's name before its message, as llama.cpp and ggml log (LLAMA_LOG_ERROR("%s: ...", __func__):
# "ggml_backend_cuda_buffer_type_alloc_buffer: allocating ...", "llama_model_load: error loading model: ..."): a program's
FUNC_PREFIX = re.compile(r"^[a-z][a-z0-9]*_[a-z0-9_]+: ")
FIELD = re.compile(r"^[A-Z][A-Za-z ]{0,20}:\s+\S+(?:\s+\S+){0,3}\s*$")  # one `Status Code: 500` row of such a form
RECORD = re.compile(r"(?:^|\s)[A-Z][A-Za-z ]{0,20}:\s")  # `Model: x Provider: y Status Code: 401`: a form a program filled
STAMP = re.compile(r"^\W{0,3}\d{4}-\d\d-\d\d[ T]\d\d:\d\d|^\W{0,3}\d\d:\d\d:\d\d|^\s*(?:\$|>>>|#\s*(?:vllm|python|docker|curl)\b)|^\s*(?:INFO|DEBUG|WARNING|ERROR)\b")


@dataclass
class _Sentence:
    where: str
    text: str


def into_facts(source: str, text: str, facts: Facts) -> bool:
    """The failures the text states into facts.said, redacted. True when it stated one."""
    from llm_doctor.logparse.perf_prose import redacted

    found = redacted(statements(source, text))
    if not found:
        return False
    known = {(s.code, s.text) for s in facts.said}
    facts.said += [s for s in found if (s.code, s.text) not in known]
    return True


# the families whose words name only the context (a proxy, a quota, a certificate, a rate limit): the sentence
# must also say that something went wrong ("I use a corporate proxy" states nothing)
CONTEXT_ONLY = frozenset({"access.proxy_failed", "access.quota_exceeded", "access.rate_limited", "access.tls_failed"})
PROBLEM = re.compile(_FAIL + r"|\b(?:problem|issue|exceed\w*|reached|hit(?:s|ting)?|block\w*|denied|again|stuck|hang\w*|unable|"
                     r"not (?:work\w*|respected|honou?red|used|applied)|ignor\w*|bypass\w*|intercept\w*|40[0-9]|429|402|"
                     r"not (?:being )?(?:forwarded|routed|passed|sent|able)|too many requests?|still(?! (?:works?|working|fine|ok))|"
                     r"unknown authority|untrusted|expired|(?:can(?:not|'t)?|only) afford|requires? more credits?|excess\w*|insuffi\w*)\b|触发|遇到|报错|失败|错误|被限", re.I)


def statements(source: str, text: str) -> list[FailureStatement]:
    """Each sentence that names a load or access failure, with the first code of VOCABULARY it holds."""
    out: list[FailureStatement] = []
    guessing = False  # inside a list of possible causes
    for s in _sentences(source, text):
        guessing = bool(GUESSES.search(s.text)) or guessing and bool(ENUMERATED.match(s.text))
        if guessing or (QUESTION.search(s.text) and not COMPLAINT.search(s.text)) or ADVICE.search(s.text) or CHANGE.match(s.text):
            continue
        probe = _probe(s.text)
        held = rq.held(probe, _literals())
        code = next((c for (c, rx), needs in zip(VOCABULARY, _required(), strict=True)
                     if not needs.absent(held) and _said(rx, probe) and (c not in CONTEXT_ONLY or PROBLEM.search(probe))), None)
        if code is not None:
            out.append(FailureStatement(code, s.where, s.text[:300]))
            if len(out) >= MAX_STATEMENTS:
                break
    return out


def _said(rx: re.Pattern[str], probe: str) -> bool:
    """The sentence holds the term undenied: "Zero Xid 43/13" and "no OOM" state what did not happen (logparse/denial.py)."""
    return any(not denied(probe, m.start(), m.group(0)) for m in rx.finditer(probe))


@functools.cache
def _required() -> tuple[rq.Required, ...]:
    """The literals of each VOCABULARY entry: one that a sentence lacks is not searched (most of them, most sentences)."""
    return tuple(rq.Required.of(rx) for _, rx in VOCABULARY)


@functools.cache
def _literals() -> tuple[str, ...]:
    return rq.universe(_required())


def _probe(text: str) -> str:
    """The sentence as the vocabulary reads it: a number's dot is no sentence end ("vLLM 0.5.1 hangs", "CUDA version
    (12.0) mismatch") and a Latin word against a Chinese one has its edge ("OOM异常" reads as "OOM 异常")."""
    return SCRIPT_EDGE.sub(" ", DIGIT_DOT.sub("·", text))


def _prose(raw: str) -> str:
    """The words of a line a person may have written, or "" for a line a program printed."""
    line = normalise(0, raw.encode("utf-8", errors="replace"))
    words = line.text.strip().strip("*_>-#|` ").strip()
    if (not words or line.level or line.process or TOOL_ROW.match(raw) or STAMP.match(raw) or raw.rstrip().endswith("\\")
            or EXCEPTION.match(words) or FRAME.match(words) or TRACEBACK.search(words) or CARET.match(words)):
        return ""
    # a program's record by its shape: a level after a tag (glog's `[W socket.cpp:601]`, `NCCL WARN`, `ERROR [x]`),
    # a filled form (`Status Code: 500`). A line quoting an error (`The demo failed to run: RuntimeError: ...`,
    # a title) is read: its words name the failure where no rule places the error it quotes
    if (own_level(line.text) or LEVEL_WORD.match(line.text) or FIELD.match(words) or FUNC_PREFIX.match(words)
            or len(RECORD.findall(words)) >= 3):
        return ""
    return " ".join(raw.strip().strip("*_>-#").split())


def _sentences(source: str, text: str) -> list[_Sentence]:
    """A person's sentences near a vocabulary literal: runs of prose lines outside code fences,
    joined across hard wraps, cut at sentence ends; each with the line it starts on."""
    lines = text.splitlines()[:MAX_LINES]
    near: set[int] = set()
    fenced, inside = set(), False
    for no, raw in enumerate(lines, 1):
        if FENCE.match(raw):
            inside = not inside
            fenced.add(no)
            continue
        if inside:
            fenced.add(no)
        elif any(lit in raw.lower() for lit in LITERALS):
            near.update(range(no - WRAP, no + WRAP + 1))
    out: list[_Sentence] = []
    para: list[tuple[int, str]] = []

    def split(run: list[tuple[int, str]]) -> list[_Sentence]:
        joined = " ".join(t for _, t in run)
        starts, pos = [], 0
        for no, t in run:
            starts.append((pos, no))
            pos += len(t) + 1
        found, at = [], 0
        for piece in SENTENCE_END.split(joined):
            at = max(at, joined.find(piece, at))
            if piece.strip():
                no = max((n for p, n in starts if p <= at), default=run[0][0])
                found.append(_Sentence(f"{source}:{no}", piece.strip()))
            at += len(piece)
        return found

    def flush() -> None:
        if para:
            found = split(para)
            if any(len(s.text) > MAX_SENTENCE for s in found):  # lines with no sentence end (a program's): each its own
                found = [s for no_text in para for s in split([no_text])]
            out.extend(s for s in found if len(s.text) <= MAX_SENTENCE)
            para.clear()

    for no, raw in enumerate(lines, 1):
        words = _prose(raw) if no in near and no not in fenced else ""
        if not words:
            flush()
            continue
        if ITEM.match(raw):  # a list item is a sentence of its own, not the wrapped rest of the one above
            flush()
        para.append((no, words))
        if raw.strip().startswith("|") or len(para) > 20:
            flush()
    flush()
    return out
