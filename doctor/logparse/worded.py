"""The last tier: a failure report whose sentences no rule places, named from the symptom words of the whole text.

A thread text is often a title, a config dump, part of a log and one or two sentences about what went
wrong, with symptom nouns but no error line a rule reads and no one sentence the prose tier
(doctor/logparse/failure_prose.py, perf_prose.py) holds whole: "a wall of raw HTML in the error toast",
"the container has no DNS resolution", "may take longer than 100 seconds, leading to
TaskCanceledException", "SSE ... displayed only when all tokens were generated ... X-Accel-Buffering".
Left there, such a report ends as doctor.input_incomplete ("nothing the doctor reads") or as nothing,
though the person said what broke.

This tier reads such a text only when it has the shape of a report of a failure: some line of a
person's words (not a question, a wish, advice, nor a change's title: failure_prose's own tests) holds
a failure word, in any of the languages the threads are written in. Then every code's symptom nouns
are counted over the WHOLE text: the code's own terms (shared/codes.md: "host name does not resolve",
"HTML from a proxy", "429", "certificate") and the engines' and clients' vocabulary for the failure
(getaddrinfo/ENOTFOUND, `<!DOCTYPE`, TaskCanceledException/ReadTimeout, X-Accel-Buffering,
CUDA_VISIBLE_DEVICES, trust_remote_code, ...). Each noun counts once, by its weight: a term only
that failure prints (3), the failure's own name (2), context that leans to it (1, which never names a
code alone). The code with the most weight, at least MIN_SCORE, is the guess; a tie goes to the
earlier code of NOUNS (a cause before the symptom it shares words with, as in failure_prose).

The guess is a fact (facts.guessed); the coverage pass (doctor/engine.py) reports it only when no
check and no other tier found anything, as a finding of the evidence tier "guess", ranked below every
finding a rule, a template or a sentence made and above the doctor's own state.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from llm_doctor.facts import Facts
from llm_doctor.facts.stated import WordedGuess
from llm_doctor.logparse import required as rq
from llm_doctor.logparse.denial import denied

MIN_SCORE = 2  # one failure's own name, or two leaning terms
MAX_GUESSES = 3  # the runners-up are kept for the evidence ("also named: ...")
HEAD_CHARS = 256 * 1024  # a person's text is short: the head of a big file is all that is read

# a failure stated, in the languages of the threads (en, zh, ja, ko, es, pt, fr, de, ru): the shape of a bug report
PROBLEM = re.compile(
    r"\b(?:error\w*|fail\w*|crash\w*|broken|breaks?|breaking|bug(?:gy)?|exception|wrong|incorrect(?:ly)?|"
    r"(?:does|did|do|is|was|are|were|can|could|will|wo)(?:\s?not|n't)\s(?:\w+\s)?(?:work|load|start|run|connect|resolve|respond|"
    r"recogni[sz]e|support|find|fit|stream|use|see|detect|return|parse)\w*|cannot|can't|unable|impossible|refus\w*|reject\w*|"
    r"hang(?:s|ing)?|hung|stuck|freez\w*|froze|slow(?:er|ly|s|down)?|degrad\w*|drops?|dropped|collaps\w*|"
    r"tim(?:es|ed|ing) ?out|timeouts?|OOMs?|out of memory|killed|abort\w*|panic\w*|limitation|problem|"
    r"nothing happens|no (?:response|output|answer|GPUs?)|zero|empty|garbage|gibberish|instead of|not (?:working|used|using|applied|respected)|"
    r"only (?:when|after|once)|(?:HTTP|status|code|an?|got|gets?|returns?|returned|with) [45]\d\d|worse|poor(?:ly)?|bottleneck\w*|"
    r"lower than (?:expected|the)|no (?:speed ?up|improvement|gain|difference)|not (?:faster|scal\w*|improv\w*)|"
    r"(?:does|did|do)(?: not|n't) (?:scale|improve|help|speed|finish|complete)\w*|too (?:slow|long|high|low|much)|never (?:\w+ )?(?:return|respond|finish|complet|load|start|work|contain|arriv|show|appear|end|stop|get|reach)\w*|no longer|"
    r"stopp?(?:ed|s)? (?:working|responding)|missing|not found|unusable|unexpected(?:ly)?|leak\w*|spikes?|"
    r"(?:only|falls? back to|fell back to|runs? on) (?:the )?CPU)\b|\w+(?:Exception|Error)\b|"
    r"报错|錯誤|错误|失败|失敗|异常|異常|无法|無法|不能|不行|问题|問題|崩溃|卡住|卡死|超时|超時|不支持|不生效|没反应|没有输出|无响应|用不了|下降|慢|"
    r"エラー|できない|タイムアウト|오류|에러|실패|\b(?:fallo|falla|falha|erreur|échec|Fehler|fehlgeschlagen)\b|ошибк\w*|не работает",
    re.I)
# the headings of an issue template's bug report (GitHub's "Describe the bug", "[Bug]:" titles, 问题描述 "problem
# description", 复现步骤 "steps to reproduce"): the text is a report of a failure, whatever words it is told in
BUG_SHAPE = re.compile(r"^\W{0,6}(?:\[bug\]|bug:|bug report|describe the bug|bug description|steps to reproduce|expected behaviou?r|"
                       r"actual behaviou?r|current behaviou?r|what happened|问题描述|复现步骤|报错信息|错误信息)", re.I | re.M)
# a failure word denied ("no errors", "without any crash", 无错误 "no error"): what went right
NO_PROBLEM = re.compile(r"\b(?:no|zero|without(?: any)?|0) (?:errors?|failures?|crash\w*|problems?|issues?|exceptions?)\b|\bnever ?mind\b|"
                        r"(?:无|没有|沒有|未见)(?:任何)?(?:错误|報錯|报错|问题|異常|异常)", re.I)
SOLUTION = re.compile(r"\b(?:the |a |my |our )?(?:solution|workaround|fix) (?:is|was)\b|\bsolved\b|解决方法|解决办法|已解决", re.I)  # the answer, not the report
# a fix's word said of the report's failure ("Issue resolved.", "fixed it", "was solved by updating the driver", "resolved after
# the upgrade"): what ended it, not a symptom; "resolve" is also the DNS lookup's verb, and must not count for it
FIXED = re.compile(r"\b(?:(?:issue|problem|bug|error|it|this|that|everything|all)\s+(?:is\s+|was\s+|has\s+been\s+|have\s+been\s+|got\s+|gets\s+|seems\s+)?"
                   r"(?:now\s+|finally\s+|been\s+)?(?:resolved|fixed|solved)|(?:resolved|fixed|solved)\s+(?:it|this|that|the\s+(?:issue|problem|error|bug)|by|after|"
                   r"with|when|now|for\s+me))\b", re.I)
KEY_VALUE = re.compile(r"^\s*[\w()/.,-]+(?: [\w()/.,-]+){0,6}\s+:\s")  # nvidia-smi -q's `HW Power Brake Slowdown : N/A`

# a launch command's line (`vllm serve M --shm-size 16g \`, `docker run ... \`, a `--flag value` continuation): what was set,
# not what went wrong; its flags name no symptom (a curl command's URL and headers are kept: they are what was asked)
COMMAND = re.compile(r"^\s*(?:\d{1,2}[.)]\s*|[-*+]\s+)?`?(?:\$\s*)?(?:sudo\s+)?(?:[A-Z_]+=\S*\s+)*(?:docker|podman|nerdctl|kubectl|vllm|python3?|sglang|lmdeploy|trtllm-\w+|"
                     r"ollama|llama-server|llama-cli|text-generation-launcher|mpirun|torchrun)\b.*\s--?\w|^\s*--?[a-z][\w-]*(?:[ =]\S+)?\s*\\?\s*$|\s\\\s*$|"
                     # a configuration's `key: value` row (a YAML file, a printed `Args { ... }`)
                     r"^\s*[\"']?[\w.-]+[\"']?\s*[:=]\s*[\"']?[\w./:@-]*[\"']?,?\s*$")


@dataclass(frozen=True)
class Noun:
    """One symptom term of a code: its weight, and the words it needs beside it somewhere in the text (an out of
    memory and the phase it happened in)."""

    code: str
    words: re.Pattern[str]
    weight: int
    needs: re.Pattern[str] | None = None
    near: int = 0  # how many characters around the term `needs` must be found in; 0: anywhere in the text

    def found(self, text: str, held: rq.Held | None = None) -> str:
        """The term as the text spells it, where it counts ("" where it does not). `held` (the literals of
        _required() the text holds): a term or needed words whose literals it lacks are not searched for (~30 ms a
        pattern over a log's head)."""
        words, needs = self.required
        if held is not None and (words.absent(held) or needs is not None and needs.absent(held)):
            return ""
        for m in self.words.finditer(text):
            if denied(text, m.start(), m.group(0)):  # "zero Xid", "well below thermal throttle": what did not happen
                continue
            if self.needs is None:
                return m.group(0)
            around = text[max(0, m.start() - self.near):m.end() + self.near] if self.near else text
            if self.needs.search(around):
                return m.group(0)
            if not self.near:
                return ""
        return ""

    @functools.cached_property
    def required(self) -> tuple[rq.Required, rq.Required | None]:
        """The literals of the term's and of the needed words' matches."""
        return rq.Required.of(self.words), rq.Required.of(self.needs) if self.needs is not None else None


def _n(code: str, words: str, weight: int, needs: str | None = None, near: int = 0) -> Noun:
    return Noun(code, re.compile(words, re.I | re.M), weight, re.compile(needs, re.I) if needs else None, near)


OOM = r"\bOOM(?:s|ed)?\b|\bout of (?:GPU |CUDA |device )?memory\b|\bCUDA error: out of memory\b|显存(?:不足|不够|溢出|爆)|\bcudaMalloc\w* failed\b"
LOADING = (r"\b(?:load\w*|start\w*|launch\w*|boot\w*|weights?|checkpoint|parameters|params|\d+(?:\.\d+)?[BM]\b|model size|fit\w*|"
           r"quantiz\w*)|加载|启动|权重")
SERVING = (r"\b(?:long (?:prompts?|context|inputs?)|concurren\w*|requests?|generat\w*|inference|decod\w*|prefill\w*|batch\w*|"
           r"after (?:a few|some|\d+|several|many)|cuda ?graph|sampl\w*|during (?:serving|inference))|推理|请求|并发")
QUANT = r"\bAWQ\b|\bGPTQ\b|\bFP[48]\b|\bNVFP4\b|\bMXFP4\b|\bbitsandbytes\b|\bmarlin\b|\bEXL2\b|\bGGUF\b|\bquantiz\w*|量化"
UNSUPPORTED = r"(?:\b(?:not (?:yet )?supported|unsupported|isn't supported|not support\w*|mismatch\w*|incompatib\w*)\b|不支持)"

def _status(codes: str) -> str:
    """An HTTP status said as one (after a word that names a status, or before its reason), not a number in a list."""
    return (r"(?:\b(?:HTTP(?:/[\d.]+)?|status(?: code)?|code|error|errors|returns?|returned|got|gets?|getting|an?|with)\W{0,3}(?:" + codes +
            r")\b|\b(?:" + codes + r")\W{0,3}(?:error|Unauthori[sz]ed|Forbidden|Not Found|Internal|Bad Gateway|Service Unavailable|"
            r"Gateway|Payment|Too Many|response|status)\b)")


ANTHROPIC = r"\bAnthropic\b|\bClaude(?:[- ]Code)?\b|/v1/messages\b|\bx-api-key\b|\banthropic-version\b"
OPENAI = r"\bOpenAI\b|/chat/completions\b|\bchat\.completions\b"

# (tried in this order on a tie: a cause before the symptom it shares words with)
NOUNS: tuple[Noun, ...] = (
    # --- access -------------------------------------------------------------------------------------
    # a key's stray characters (codes.md: whitespace, quotes, a newline, a `Bearer ` prefix) beside the key it spoils
    _n("access.key_malformed", r"\b(?:trailing|leading|extra|stray) (?:newline|whitespace|space|quotes?|\\n)\b|\bBearer Bearer\b|"
       r"\bNewline\b[^.\n]{0,40}?\bheaders?\b|\bheader injection\b|\bIllegal header value\b", 3, r"\b(?:api[ _-]?key|token|key|Authorization)\b|[A-Z]+_API_KEY"),
    _n("access.key_missing", r"\bno api[ _-]?key\b|\bapi[ _-]?key (?:is )?(?:missing|not set|required)\b|\bmissing (?:api[ _-]?key|credentials)\b|"
       r"\bThe api_key client option must be set\b|\bdid(?: not|n't) provide an API key\b", 3),
    _n("access.key_rejected", _status("40[13]") + r"|\bunauthori[sz]ed\b|\bforbidden\b|\b(?:invalid|incorrect|wrong|expired|revoked) "
       r"(?:api[ _-]?key|key|token)\b|\bauthentication(?:_| )error\b|\binvalid_api_key\b", 2),
    _n("access.quota_exceeded", r"\bquota\b|\binsufficient[_ ](?:quota|credits?|balance|funds)\b|\bbilling\b|\bpayment required\b|"
       r"\bcredits?\b|余额不足|额度", 2),
    _n("access.quota_exceeded", _status("402"), 2),
    _n("access.rate_limited", r"\b429\b(?![\d.,])|\brate[ _-]?limit\w*|\btoo many requests\b|\bRateLimitError\b|\b[RT]PM\b|限流|频率限制", 2),
    _n("access.tls_failed", r"\bCERTIFICATE_VERIFY_FAILED\b|\bSSLError\b|\bSSLCertVerificationError\b|\bself[- ]signed\b|\bx509\b|"
       r"\bWRONG_VERSION_NUMBER\b|\bUNABLE_TO_VERIFY_LEAF_SIGNATURE\b|\bunable to get local issuer\b", 3),
    _n("access.tls_failed", r"\bcertificates?\b|\b(?:SSL|TLS)\b|\bhandshake\b|\bCA bundle\b|\bREQUESTS_CA_BUNDLE\b|\bSSL_CERT_FILE\b|"
       r"\bNODE_EXTRA_CA_CERTS\b|证书", 2),
    _n("access.streaming_broken", r"\bX-Accel-Buffering\b|\bproxy_buffering\b|\btext/event-stream\b|\bdata: \[DONE\]|流式", 3),
    _n("access.streaming_broken", r"\bSSE\b|\bstream(?:ing|ed)?\b|\bevent[- ]stream\b|\bchunks?\b|\btoken[- ]by[- ]token\b", 1),
    _n("access.streaming_broken", r"^\s*data: ?\{", 1),  # a server-sent event's own line, as the wire carries it
    _n("access.streaming_broken", r"\bbuffer(?:ing|ed|s)?\b|\b(?:all )?at once\b|\bonly (?:when|after) (?:all|the whole|the full|it)|\bin (?:one|a single) "
       r"(?:burst|chunk|block|go)\b|\btruncat\w*|\bUnterminated string\b|\bmalformed\b|\bbroken\b|\binvalid JSON\b|\bJSON\.parse\b|\bparse error\b", 1, r"\bSSE\b|\bstream\w*\b|\bevent-stream\b|\bchunks?\b"),
    _n("access.proxy_failed", r"\b(?:HTTPS?|ALL|NO)_PROXY\b|\b407\b|\bProxy Authentication Required\b|\b(?:corporate|company|forward|squid|socks5?) proxy\b|代理", 3),
    _n("access.proxy_failed", r"\bproxy\b", 1),
    _n("access.dns_failed", r"\bgetaddrinfo\b|\bENOTFOUND\b|\bEAI_AGAIN\b|\bName or service not known\b|\bno such host\b|\bnodename nor servname\b|"
       r"\bTemporary failure in name resolution\b|\bCould not resolve host\b|\bresolv\.conf\b|\bnslookup\b|域名解析", 3),
    _n("access.dns_failed", r"\bDNS\b|\bresolv(?:e|es|ed|ing|ution)\b", 2),
    _n("access.dns_failed", r"\bhost ?names?\b", 1),
    _n("access.connect_failed", r"\bECONNREFUSED\b|\bConnection refused\b|\bFailed to establish a new connection\b|\bConnectError\b|"
       r"\bAPIConnectionError\b|\bCannot connect to host\b|\bConnection error\b|\bEHOSTUNREACH\b|\bNetwork is unreachable\b|连接(?:失败|被拒|拒绝)", 3),
    _n("access.connect_failed", r"\bconnect(?:ion|ing|s)?\b|\bunreachable\b|\bport \d+\b|\bfirewall\b|\bhost\.docker\.internal\b", 1),
    _n("access.timeout", r"\bTaskCanceledException\b|\bReadTimeout\w*\b|\bAPITimeoutError\b|\bTimeoutError\b|\bETIMEDOUT\b|\bdeadline exceeded\b|"
       r"\bHttpClient\.Timeout\b|\bGateway Time-?out\b|超时|超時|タイムアウト", 3),
    _n("access.timeout", r"\btim(?:es|ed|ing) ?out\b|\btimeouts?\b|\b(?:takes?|took|taking) (?:longer|more) than \d+ ?(?:s|sec\w*|min\w*)\b|"
       r"\bafter \d+ ?(?:s|sec\w*|seconds|minutes)\b", 2),
    _n("access.protocol_mismatch", ANTHROPIC, 2, OPENAI),
    _n("access.protocol_mismatch", r"\b(?:wire|API|request) formats?\b|\bformat (?:mismatch|conversion|translation)\b|\btranslat\w*\b|\bconvert\w*\b|"
       r"\bcompatib\w*|兼容|转换", 1, ANTHROPIC),
    _n("access.response_invalid", r"<!DOCTYPE|<html\b|\bHTML\b|\bUnexpected token '?<'?|\bnot valid JSON\b|\bJSONDecodeError\b|\bSyntaxError: Unexpected\b|"
       r"\binvalid JSON\b|\bfailed to parse\b|\bcannot parse\b|\bcould not parse\b|解析失败", 2),
    _n("access.response_invalid", r"\bempty (?:reply|response|content|body|answer|choices)\b|\bno choices\b|\bchoices\b[^.\n]{0,20}?\b(?:missing|null|empty)\b|"
       r"\bparse\w*\b|\bcontent\W{0,4}(?:null|None|\"\")", 1),
    _n("access.server_error", _status("50[0234]") + r"|\bInternal Server Error\b|\bBad Gateway\b|\bService Unavailable\b|\bInternalServerError\b", 2),
    _n("access.base_url_invalid", r"\bbase[ _-]?url\b|\bbaseURL\b|\bapi[ _-]?base\b|\bOPENAI_(?:API_)?BASE(?:_URL)?\b|\bEndpoint\b", 1),
    _n("access.base_url_invalid", r"(?<![\w/])/v1\b(?!/)|\bdoubled? /v1\b|/v1/v1\b", 1, r"\bbase[ _-]?url\b|\bbaseURL\b|\bapi[ _-]?base\b|\bEndpoint\b"),
    _n("access.base_url_invalid", _status("404") + r"|\bNot Found\b", 1, r"\bbase[ _-]?url\b|\bbaseURL\b|\bapi[ _-]?base\b|\bEndpoint\b"),
    _n("access.model_not_found", r"\bmodel\b[^.\n]{0,40}?\b(?:not found|does not exist|not exist|isn't served|not served|unknown)\b|\bmodel_not_found\b|"
       r"\bNotFoundError\b|模型不存在|找不到模型", 2),
    # --- load ---------------------------------------------------------------------------------------
    _n("load.host_oom", r"\bOOM[- ]?kill\w*|\bOOMKilled\b|\bexit(?:ed)? (?:code |with )?137\b|\bKilled process\b|\bhost (?:RAM|memory)\b|内存不足", 3),
    _n("load.shm_insufficient", r"/dev/shm\b|\bshm[-_ ]size\b|\bshared memory\b|共享内存", 3),
    _n("load.gpu_fault", r"\bXid\b|\bECC\b|\bfallen off the bus\b|\bGPU is lost\b", 3),
    _n("load.remote_code", r"\btrust[-_ ]remote[-_ ]code\b", 3),
    _n("load.tp_invalid", r"\bdivisible\b|\bdivide[sd]?\b|整除", 2, r"\bheads?\b|\btensor[ _-]parallel\w*|\btp\b|\bGPUs?\b"),
    _n("load.nccl_failed", r"\bNCCL\w*\b|\ball[- ]?reduce\b|\bProcessGroup\w*|\bc10d\b|\bdistributed init\w*", 2),
    _n("load.cuda_mismatch", r"\bno kernel image\b|\bCUDA driver version is insufficient\b|\blibcudart\.so\S*|\bundefined symbol\b|"
       r"\bbuilt (?:with|for|against) CUDA\b|\bCUDA (?:version )?mismatch\b", 3),
    # the code's own name (codes.md: "driver / CUDA runtime ... incompatible"): a CUDA version said, near, not to fit
    _n("load.cuda_mismatch", r"\bCUDA (?:version|toolkit|runtime|driver)\b", 2, r"\bmismatch\w*|\bincompatib\w*|\bnot (?:compatible|match\w*)\b|"
       r"\btoo old\b|\binsufficient\b", 60),
    _n("load.cuda_mismatch", r"\bcompute capabilit\w*|\bsm_\d+\b|\bcu\d{3}\b|\bCUDA (?:version|toolkit|runtime)\b|\bdriver version\b|\bwheel\b", 1,
       r"\bmismatch\w*|\bincompatib\w*|\bnot (?:compatible|match\w*)\b|\btoo old\b|\binsufficient\b|\bsupport\w*"),
    _n("load.dtype_unsupported", r"\bbfloat16\b|\bbf16\b|\bfp16\b|\bfloat16\b|\bdtype\b|\b(?:half|FP16|BF16) precision\b|半精度", 2,
       r"\bcompute capabilit\w*|\bsupport\w*|\bV100\b|\bT4\b|\bP40\b|\bP100\b|\bTuring\b|\bVolta\b|\bPascal\b"),
    _n("load.quantization_unsupported", r"(?:" + QUANT + r")[^.\n]{0,60}?" + UNSUPPORTED + r"|" + UNSUPPORTED + r"[^.\n]{0,60}?(?:" + QUANT + r")", 2),
    _n("load.quantization_unsupported", QUANT, 1, UNSUPPORTED),
    _n("load.gpu_not_visible", r"\bCUDA_VISIBLE_DEVICES\b|\bnvidia-container\w*|\b--gpus\b|\bno (?:CUDA )?GPUs?\b|\bzero GPUs\b|\b0 GPUs\b|"
       r"\b(?:only|on the|falls? back to (?:the )?|fallback to (?:the )?)CPU\b|\bnot using (?:the )?GPU\b|\btorch\.cuda\.is_available\(\)|"
       r"\bno NVIDIA GPU\b|\bGPU (?:not|isn't|is not) (?:detected|found|used|visible)\b|没有(?:使用|用到)?GPU|只(?:用|使用)CPU", 2),
    _n("load.startup_timeout", r"\b(?:readiness|liveness|startup) probe\w*|\binitialDelaySeconds\b|\bfailureThreshold\b|\bhealth ?check\w*", 2),
    # Ollama server.go "timed out waiting for llama runner to start", kubelet "Liveness probe failed", vLLM's VLLM_ENGINE_READY_TIMEOUT_S,
    # Ollama's OLLAMA_LOAD_TIMEOUT; a timeout said of the load or the start-up (the engine's phase, not a request's)
    _n("load.startup_timeout", r"\btimed out waiting for (?:the )?(?:llama runner|runner|server|engine|model)\b|\b(?:Liveness|Readiness|Startup) probe failed\b|"
       r"\bVLLM_ENGINE_READY_TIMEOUT_S\b|\bOLLAMA_LOAD_TIMEOUT\b|\b(?:load\w*|start\w*|start-up|boot\w*|warm ?up)\b[^.\n]{0,40}?\b(?:tim(?:es|ed|ing) ?out|timeout)\b|"
       r"\b(?:tim(?:es|ed|ing) ?out|timeout)\b[^.\n]{0,30}?\b(?:while|during|when|before) (?:it )?(?:load|start|boot)\w*|加载超时|启动超时", 3),
    _n("load.model_files", r"\bconfig\.json\b|\bsafetensors\b|\bgated\b|\bNo such file or directory\b|\bHF_TOKEN\b|\bsnapshot_download\b|"
       r"\bhuggingface-cli\b|\bmodel (?:path|files?|directory)\b", 2),
    # OpenAI's 400 for a request with no model ("you must provide a model parameter"), a model name left empty
    _n("access.model_id_missing", r"\byou must provide a model parameter\b|\bmodel (?:id |name )?(?:is )?(?:missing|empty|required|not (?:set|specified|selected))\b|"
       r"\bno model (?:specified|selected|given|configured|set)\b|\bempty model\b", 3),
    # another process's memory on the GPU the engine starts on (codes.md load.gpu_memory_occupied)
    _n("load.gpu_memory_occupied", r"\b(?:another|other|second|zombie|leftover|previous) (?:process\w*|instance\w*|model\w*|container\w*)\b|\boccupied\b|"
       r"\balready (?:in use|used|allocated|taken)\b|\bheld by\b|占用", 2, r"\bGPU\b|\bVRAM\b|\bmemory\b|显存", 80),
    # vLLM "No available memory for the cache blocks", a block count of zero or below
    _n("load.no_kv_cache_memory", r"\bNo available memory for the cache blocks\b|\bnum_gpu_blocks\w*\b[^.\n]{0,20}?(?:\b0\b|-\d|negative)|"
       r"\b(?:0|zero|negative) (?:GPU |KV )?(?:cache )?blocks\b", 3),
    # vLLM "... larger than the maximum number of tokens that can be stored in KV cache"
    _n("load.kv_cache_insufficient", r"\bmaximum number of tokens that can be stored in KV cache\b", 3),
    _n("load.config_invalid", r"\bunrecogni[sz]ed arguments?\b|\bunknown (?:flag|argument|option)\b|\binvalid (?:value|argument|choice)\b|"
       r"\bValidationError\b|\bmax[-_]model[-_]len\b[^.\n]{0,60}?\b(?:greater|larger|exceed\w*)\b", 2),
    # argparse "error: argument --x: invalid ...", pydantic's "Extra inputs are not permitted", a keyword the API does not take
    _n("load.config_invalid", r"\berror: argument --[\w-]+|\bExtra inputs are not permitted\b|\bgot an unexpected keyword argument\b|"
       r"\bis not a valid (?:choice|value|option|argument)\b", 3),
    _n("load.engine_outdated", r"\bupgrad\w*|\bnewer (?:version|release)\b|\bpredates?\b|\bnot (?:yet )?supported\b|\bunsupported architecture\b|"
       r"\bdoes not recogni[sz]e\b|\bolder version\b|\btoo old\b|\brequires? (?:transformers|vllm|sglang)\s?[>=]=|升级|版本(?:太低|过低|过旧)", 2,
       r"\btransformers\b|\barchitecture\b|\bmodel[ _]type\b|\bvLLM\b|\bSGLang\b|\bllama\.cpp\b|\bOllama\b|\bLMDeploy\b|\bversion\b"),
    _n("load.kv_cache_insufficient", r"\bKV cache\b", 2, r"\bmax[-_ ](?:model|seq)[-_ ]len\b|\bcontext (?:length|size|window)\b"),
    _n("load.weights_oom", OOM, 2, LOADING, 200),  # (the phase is told beside the OOM: "OOM when loading the 70B")
    _n("load.runtime_oom", OOM, 2, SERVING, 200),
    _n("load.weights_oom", OOM, 1, LOADING),  # (else anywhere in the text, by less)
    _n("load.runtime_oom", OOM, 1, SERVING),
    _n("load.weights_oom", r"\b(?:does(?: not|n't)|won'?t|can(?:not|'t)) fit\b|\bnot enough (?:GPU |V)?(?:memory|RAM|VRAM)\b", 1),
    # --- perf ---------------------------------------------------------------------------------------
    _n("perf.gpu_throttled", r"\bpower[- ]?(?:cap\w*|limit\w*|brake)\b|\bnvidia-smi -pl\b|\bthrottl\w*|\bthermal\b|\bclocks? (?:drop|down|stuck|low)\w*", 2),
    _n("perf.prefix_caching_off", r"\bprefix[- _]cach\w*|\bcache hit\w*|\bcached_tokens\b|\bcache_read_input_tokens\b|\benable[-_]prefix[-_]caching\b|"
       r"\bradix[- _]cache\b|\bcache_prompt\b|\bprompt cach\w*|\b(?:KV )?(?:cache|block) reuse\b|\benable_block_reuse\b", 2),
    _n("perf.memory_overcommitted", r"\bgpu[-_ ]memory[-_ ]utili[sz]ation\b|\bunified memory\b|\bevict\w*|\bheadroom\b|\bmigrat\w* (?:the )?overflow\b", 2,
       r"\bslow\w*|\bdrop\w*|\bcollaps\w*|\bintermittent\w*|\bpeaks?\b|\bspread\b|\bcompet\w*|\bpressure\b"),
    _n("perf.batching_limited", r"\bone (?:request )?at a time\b|\bsequential\w*|\bserializ\w*|\bnot (?:processed |run |handled )?in parallel\b|\bOLLAMA_NUM_PARALLEL\b|"
       r"\b(?:parallel|concurrent) (?:requests?|slots?)\b|\bslots?\b|\bbatch (?:size|cap)\b|串行|排队", 2, r"\bconcurren\w*|\bthroughput\b|\bparallel\b|并发|\brequests?\b"),
    _n("perf.batching_limited", r"\bmax[-_ ]num[-_ ]seqs\b|\bmax[-_ ]batch[-_ ]size\b|\bmax[-_ ]num[-_ ]batched[-_ ]tokens\b|\binstance_num\b", 1,
       r"\bconcurren\w*|\bthroughput\b|并发"),
    # (the slowness said near the GPU's use: "GPU usage never exceeds 70%" and, elsewhere, "KV cache usage very low" is no complaint of it)
    _n("perf.low_gpu_util", r"\bn_gpu_layers\b|\b-ngl\b|\bGPU util\w*|\bGPU usage\b", 2, r"\bslow\w*|\b\d+(?:\.\d+)? tokens? (?:per second|/s)\b|\blow\b", 80),
    # (a GPU's memory, KV cache or VRAM at a low share is not its compute idle)
    _n("perf.low_gpu_util", r"\bGPU(?:[- ]util\w*| usage| load)?\b(?:(?!\b(?:KV|cache|memory|mem|VRAM)\b)[^.\n]){0,40}?(?:\b(?:stays?|only|at|around|about|below|under) [0-4]?\d ?%|\b0 ?%|\blow\b|\bidle\b)", 3),
    _n("perf.eager_mode", r"\benforce[-_ ]eager\b|\bCUDA graphs?\b", 1, r"\bslow\w*|\bdisabl\w*"),
    _n("perf.eager_mode", r"\beager mode\b|\b--disable-cuda-graph\b|\bdisable_cuda_graph\b|\b(?:without|no|uncaptured|disabled?) CUDA ?graphs?\b", 2),
    _n("perf.cpu_bound", r"\bthreads?\b|\bE-cores?\b|\bCPU (?:bound|bottleneck|usage)\b|\b100 ?% CPU\b", 1, r"\bslow\w*|\bCPU\b"),
    _n("perf.cpu_bound", r"\bCPU[- ](?:bound|bottleneck\w*)|\bsingle[- ](?:core|thread\w*)\b|\b100 ?% (?:of (?:one|a) )?CPU\b|\bCPU (?:is |at )?(?:pegged|maxed|100 ?%)", 3),
    _n("perf.slow_interconnect", r"\bPCIe\b|\bNVLink\b|\bP2P\b|\bInfiniBand\b", 1, r"\bslow\w*|\bbandwidth\b"),
    _n("perf.slow_interconnect", r"\bP2P (?:is )?(?:disabled|not supported|unavailable)\b|\bNCCL_P2P_DISABLE\b|\bover PCIe\b|\bno NVLink\b|\bwithout NVLink\b|"
       r"\bNET/Socket\b|\b(?:low|poor|slow) (?:bus |all-?reduce )?bandwidth\b", 3),
    # latency (codes.md perf.high_latency: TTFT, inter-token latency) and the KV cache that makes requests wait or be preempted
    _n("perf.high_latency", r"\bTTFT\b|\btime to first token\b|\binter-?token latency\b|\bITL\b|\bTPOT\b|\blatency\b|首字延迟|延迟", 2,
       r"\bslow\w*|\bhigh\b|\blong\b|\bworse\b|\b\d+(?:\.\d+)? ?(?:s|sec\w*|ms)\b|\bspikes?\b|高|慢", 80),
    _n("perf.kv_cache_pressure", r"\bpreempt\w*|\brecomput\w*|\bKV cache (?:usage|is full|full|exhausted)\b|\bWaiting: ?\d+|\b#queue-req\b|\bswapp(?:ed|ing)\b", 2),
    # tensor parallelism that gains nothing over fewer GPUs (codes.md perf.tp_mismatch)
    _n("perf.tp_mismatch", r"\b(?:tensor[- ]parallel\w*|TP ?=? ?\d|--tp\b|tp_size)\b[^.\n]{0,80}?\b(?:no (?:speed ?up|gain|improvement|faster)|not faster|"
       r"slower than (?:one|a single|1|fewer)|same (?:throughput|speed) as)", 3),
)


def into_facts(source: str, text: str, facts: Facts) -> bool:
    """The guesses the text's words make into facts.guessed. True when it made one."""
    from llm_doctor.logparse.perf_prose import redacted

    found = redacted(guesses(source, text))
    facts.guessed += found
    return bool(found)


def guesses(source: str, text: str) -> list[WordedGuess]:
    """The codes whose symptom nouns the text holds, best first, when some line of it states a failure."""
    text = text[:HEAD_CHARS]
    lines = text.splitlines()
    said = _stated_at(lines)
    if said is None:
        return []
    text = "\n".join(line for line in lines if not COMMAND.search(line))  # a flag set is a setting, not a symptom
    text = FIXED.sub(" ", text)
    held = rq.held(text, _literals())
    scored: list[tuple[int, int, str, list[str]]] = []
    for order, code in enumerate(dict.fromkeys(n.code for n in NOUNS)):
        score, words = 0, []
        for noun in (n for n in NOUNS if n.code == code):
            term = noun.found(text, held)
            if term:
                score += noun.weight
                words.append(term.strip())
        if score >= MIN_SCORE:
            scored.append((-score, order, code, words))
    scored.sort()
    where = f"{source}:{said + 1}"
    return [WordedGuess(code, -neg, list(dict.fromkeys(words)), where, lines[said].strip()[:300])
            for neg, _, code, words in scored[:MAX_GUESSES]]


@functools.cache
def _literals() -> tuple[str, ...]:
    return rq.universe(r for noun in NOUNS for r in noun.required)


def _stated_at(lines: list[str]) -> int | None:
    """The index of the first line of a person's words that states a failure (not a question, a wish, advice or a
    change's title), else of an issue template's bug-report heading, or None: a text that states no failure is no
    report of one, and guesses nothing."""
    from llm_doctor.logparse.failure_prose import ADVICE, CHANGE, COMPLAINT, QUESTION, SENTENCE_END, _prose

    for no, raw in enumerate(lines):
        raw = NO_PROBLEM.sub(" ", raw)
        # a program's line (a level, a timestamp), a table row, a tool's `Key : Value` row: no person's report
        words = "" if raw.lstrip().startswith("|") or KEY_VALUE.match(raw) else _prose(raw)
        for sentence in SENTENCE_END.split(words) if words and PROBLEM.search(words) else ():
            if not _states(sentence) or (QUESTION.search(sentence) and not COMPLAINT.search(sentence)):
                continue
            if not (CHANGE.match(sentence) or ADVICE.search(sentence) or SOLUTION.search(sentence)):
                return no
    text = "\n".join(lines)
    shaped = BUG_SHAPE.search(text)
    return text.count("\n", 0, shaped.start()) if shaped else None


def _states(sentence: str) -> bool:
    """The sentence holds a failure word undenied ("Nothing wrong", "zero crashes" state that all went well)."""
    return any(not denied(sentence, m.start(), m.group(0)) for m in PROBLEM.finditer(sentence))
