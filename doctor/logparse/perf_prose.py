"""Perf problems a person states in a sentence, read into the facts the perf checks judge.

An issue often carries no stat line at all, only the reporter's words around the numbers they
saw: "GPU KV cache usage stays at 99 % and 40 requests are waiting", "SW Power Cap is active and
the SM clock sits at 1500 MHz", "TTFT is 20 s with 10 concurrent requests", "Prefix cache hit rate
0%". Such a sentence is read the way failures.py reads a failure stated in prose: by the terms the
engines and tools themselves use for the measure (vLLM's stat line labels and metric names, the
Grafana vLLM dashboard's panels, SGLang's stat line, nvidia-smi's clocks event reasons), and the
number next to the term. The numbers fill the same facts a /metrics scrape or a stat line fills
(facts.metrics, origin "prose"), so kv_cache, latency and prefix_cache judge them with their own
thresholds and compute their fixes; a GPU's clocks and reasons are kept on the statement (a sentence
says nothing of how many GPUs there are, so it must not become GPU inventory). Every statement is
kept in facts.stated with its code: one that gives no number a check can judge is still reported
(checks/perf/stated.py). Questions, advice and reports of an improvement state no problem.

Read only on lines with no log level of their own (a person's words carry none) that are not an
engine's stat line (stat_lines.py reads those), nor a `Key : Value` row of `nvidia-smi -q`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

from llm_doctor.facts import Facts
from llm_doctor.facts.gpu import Gpu
from llm_doctor.facts.metrics import MetricsFacts
from llm_doctor.facts.stated import PerfStatement
from llm_doctor.logparse import prefilter as pf
from llm_doctor.logparse import stat_lines
from llm_doctor.logparse.lines import normalise

_T = TypeVar("_T")  # a statement of either reader (this one, failure_prose): anything with a .text

MAX_SENTENCE = 600  # a "sentence" longer than this is a pasted blob, not a person's words
MAX_STATEMENTS = 32
NEAR = 80  # characters between a term and the number that measures it
SPREAD = 2.0  # a latency column's slowest row at this many times its fastest: the slow row is the complaint

_NUM = r"(\d+(?:[.,]\d+)?)"
PERCENT = re.compile(_NUM + r"\s?%")
FRACTION = re.compile(r"(?<![\w.])(0?\.\d+|1\.0+|[01])(?![\w.%])")
DURATION = re.compile(r"(?<![\w.])~?" + _NUM + r"\s?(ms|milliseconds?|msecs?|s|secs?|seconds?)\b|(?<![\w.])~?" + _NUM + r"\s?(초|秒)", re.I)  # (Korean, Chinese)
MHZ = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s?MHz", re.I)
WATTS = re.compile(r"(\d+(?:\.\d+)?)\s?W\b")
CELSIUS = re.compile(r"(\d+(?:\.\d+)?)\s?°?\s?C\b")
GPU_INDEX = re.compile(r"\bGPU\s?#?(\d)\b")

# --- the terms, as the engines and tools spell them ----------------------------------------------
# vLLM: "GPU KV cache usage: %.1f%%" (stat line), vllm:gpu_cache_usage_perc / vllm:kv_cache_usage_perc
# (metrics), the dashboard's "Cache Utilization" panel ("GPU Cache Usage"); SGLang: "token usage: %.2f"
# ... and a bare "cache" right after its percentage ("close to 100% cache"), not a hit rate's
KV = re.compile(r"\bKV[ -]?cache(?: usage| utili[sz]ation| occupancy| util)?\b|\bKV (?:usage|utili[sz]ation|occupancy)\b|\b(?:gpu|kv)_cache_usage(?:_perc)?\b|"
                r"\bGPU Cache Usage\b|\bCache Utili[sz]ation\b|\btoken[ _]usage\b|(?<=%\s)(?:GPU\s)?cache\b(?![ -]hit)", re.I)
KV_FULL = re.compile(r"\b(?:(?:is|was|gets?|got|becomes?|became|stays?|remains?|almost|nearly|completely|totally|always) full|fills? up|"
                     r"filled up|exhausted|saturated|maxed(?: out)?|runs? out|running out|ran out|no (?:free )?(?:room|space|blocks?)|"
                     r"(?:near(?:ly)?|close to|almost|hits?|hitting|reach(?:es|ed|ing)?|at|stays? at|stuck at|pinned at) 100\s?%)", re.I)
# the scheduler's queue: vLLM "Waiting: %d reqs" (V0 "Pending"), vllm:num_requests_waiting, the dashboard's
# "Scheduler State"; SGLang "#queue-req: %d"; preemption: vLLM's "Preemptions: %d", vllm:num_preemptions_total
WAITING = re.compile(r"(\d+)\s(?:(?:more |pending |new |incoming )?(?:requests?|reqs?|seqs?|sequences?|prompts?)\s)?(?:are |were |stay |sit |keep )?"
                     r"(?:waiting|queued|pending|in (?:the )?(?:waiting )?queue)\b|"
                     r"(?:\bWaiting|\bPending|#queue-req|num_requests_waiting|queue(?: length| size| depth)?)\s?(?:reqs?)?\s?[:=]?\s?(\d+)", re.I)
RUNNING = re.compile(r"(\d+)\s(?:requests?|reqs?|seqs?|sequences?)\s(?:are )?running\b|(?:\bRunning|#running-req|num_requests_running)\s?[:=]?\s?(\d+)", re.I)
# (ASCII bounds: "waiting机制" in a Chinese sentence is the word)
QUEUE_WORDS = re.compile(r"(?<![A-Za-z])(?:queue(?:s|d|ing)?|waiting|pending|wait(?:s)? in|piles? up|pile up|backlog)(?![A-Za-z])", re.I)
PREEMPT = re.compile(r"\bpreempt\w*|\bswapp(?:ed|ing) out\b|\bretract\w*", re.I)
# ... and a benchmark table's column of them read with its header ("preempt 1065", "#preempted 12")
# (a count in words too, as a person writes it: "Ten preemptions in one run")
COUNT_WORDS = {w: n for n, w in enumerate("two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
                                          "seventeen eighteen nineteen twenty".split(), 2)}
_COUNT = r"(\d+|" + "|".join(COUNT_WORDS) + r")"
PREEMPTIONS = re.compile(r"(?<![\w.])" + _COUNT + r"\s(?:preemptions?|requests? (?:were |are )?preempted)|(?:Preemptions|num_preemptions(?:_total)?)(?: detected| observed| seen| happened| occurred)?\s?[:=]?\s?(\d+)|"
                         r"\bpreempted (\d+) times\b|(?:^|;\s)#?(?:preempt|preempted|preempts)\s(\d+)(?:;|$)", re.I)
# vLLM "Prefix cache hit rate: %.1f%%", vllm:prefix_cache_hits / prefix_cache_queries, gpu_prefix_cache_hit_rate;
# SGLang "cache hit rate", sglang:cache_hit_rate, "#cached-token: %d"
PREFIX = re.compile(r"\b(?:(?:prefix|prompt)[ -]cach(?:e|ing)(?: hit rate| hits?)?|(?:prefix |radix |KV )?cache hit(?: rate| ratio)?|prefix_cache_hits?(?:_total)?|"
                    r"gpu_prefix_cache_hit_rate|cache_hit_rate|#cached-token|automatic prefix caching|APC)\b", re.I)
PREFIX_OFF = re.compile(r"\b(?:off|disabled|not (?:enabled|on|used|working|reused|hit\w*)|never (?:hits?|reused?|enabled|engages?|passe?s?|set)|"
                        r"(?:does not|doesn't|did not|didn't|is not|isn't|never|won't) (?:work|help|hit|kick in|take effect|reuse|speed)\w*|"
                        r"no (?:speed-?up|benefit|gain|improvement|effect)|cache miss(?:es)?|same (?:TTFT|latency|speed)|as slow as|"
                        r"no (?:cache )?hits?|zero (?:cache )?hits?|without|missing|re-?prefill\w*|recomput\w*)\b|--no-enable-prefix-caching|"
                        r"--disable-radix-cache|\bre-?prefill\w*", re.I)
PREFIX_FLAG_UNSET = re.compile(r"\b(?:without|never (?:passes|sets|uses|enables)|not (?:passing|setting|using)|no|missing)\s`?--enable-prefix-caching\b|"
                               r"--no-enable-prefix-caching|--disable-radix-cache|\bre-?prefill(?:s|ed|ing)? (?:the )?(?:full|whole|entire|same)\b", re.I)
# OpenAI's usage.prompt_tokens_details.cached_tokens and Anthropic's usage.cache_read_input_tokens: the prompt
# tokens a request read from the cache; 0 on a repeated request is a 0 % hit rate
CACHE_READ = re.compile(r"\b(?:cache_read_input_tokens|cached_tokens)['\"]?\s?[:=]\s?(\d+)")
# time to first token and per output token: vLLM's vllm:time_to_first_token_seconds, time_per_output_token_seconds
# (the dashboard's "Time To First Token Latency", "Time Per Output Token Latency"), benchmark_serving's TTFT/TPOT/ITL
TTFT = re.compile(r"\bTTFT\b|\btime[ -]to[ -]first[ -]token\b|\bfirst[ -]token (?:latency|time)\b|"
                  r"\bfirst (?:output |generated )?token (?:takes|took|arrives|arrived|appears|appeared|comes|came)\b|\blatency (?:for|of) the first token\b|\btime_to_first_token(?:_seconds)?\b", re.I)
ITL = re.compile(r"\bTPOT\b|\bITL\b|\binter[ -]?token latency\b|\btime per output token\b|\btime_per_output_token(?:_seconds)?\b|"
                 r"\bper[ -]token latency\b|(?:(?<=\dms )|(?<=\d ms )|(?<=\ds )|(?<=\d s ))per (?:output |generated )?token\b|(?<=ms)/tok(?:en)?\b", re.I)
# a generation speed said low ("I only get 5 tok/s", "generation speed is only 3 tokens per second"): one request's decode
# speed, 1 / its inter-token latency (prompt/prefill speeds are not decode's)
SPEED = re.compile(r"(?<![\w.])(?P<tps>\d+(?:\.\d+)?)\s?(?:tok(?:en)?s?/s(?:ec)?|t/s|tokens? (?:per|a|/) ?s(?:ec(?:ond)?)?)\b", re.I)
SPEED_LOW = re.compile(r"\b(?:only|just|merely|barely|slow(?:ly)?|drops? to|dropped to|as low as|a mere|mere|crawl\w*)\s(?:\w+\s){0,3}?$", re.I)
PREFILL_WORDS = re.compile(r"\b(?:prompt|prefill|pp\d*|prompt[ _]eval|input|ingest\w*|embedding|batch(?:ed)?)\b", re.I)
# a time for a number of tokens ("it takes 40 seconds to generate 200 tokens", "200 tokens in 40 s")
TIME_FOR_TOKENS = re.compile(r"\btakes?\s(?:about\s|around\s|~)?(?P<s>\d+(?:\.\d+)?)\s?(?P<unit>s|secs?|seconds?|min(?:ute)?s?)\sto\s(?:generate|produce|output|get|write)\s"
                             r"(?:only\s)?(?P<n>\d+)\s(?:output\s|new\s)?tokens\b|"
                             r"\b(?P<n2>\d+)\s(?:output\s|new\s)?tokens\s(?:take\s|took\s)?in\s(?:about\s|around\s|~)?(?P<s2>\d+(?:\.\d+)?)\s?(?P<unit2>s|secs?|seconds?|min(?:ute)?s?)\b|"
                             # "one token every 5-7 s", "gets one token per 3.5+ s": the interval itself (a range: its low end)
                             r"\b(?:one|a single|1) (?:output |new )?token (?:every|per|each) (?:about\s|around\s|~)?(?P<s3>\d+(?:\.\d+)?)(?:\s?[-–]\s?\d+(?:\.\d+)?)?\+?\s?"
                             r"(?P<unit3>s|secs?|seconds?|min(?:ute)?s?)\b", re.I)
LATENCY_HIGH = re.compile(r"\b(?:high|slow|long|huge|spik\w*|too|increas\w*|grows?|grew|balloon\w*|terrible|bad|unacceptabl\w*|degrad\w*)\b", re.I)
# nvidia-smi -q "Clocks Event Reasons" (before driver 535 "Clocks Throttle Reasons") and --query-gpu
# clocks_event_reasons.* / clocks_throttle_reasons.*: NVML's names for why the clock is held down
REASONS = (
    ("hw_thermal_slowdown", re.compile(r"\b(?:HW|hardware)[ _-]Thermal[ _-]Slowdown\b", re.I)),
    ("sw_thermal_slowdown", re.compile(r"\bSW[ _]Thermal[ _]Slowdown\b", re.I)),
    ("hw_power_brake_slowdown", re.compile(r"\bHW[ _]Power[ _]Brake(?:[ _]Slowdown)?\b", re.I)),
    ("hw_slowdown", re.compile(r"\bHW[ _]Slowdown\b", re.I)),
    ("sw_power_cap", re.compile(r"\bSW[ _]Power[ _]Cap\b|\bpower[- ]capp(?:ed|ing)\b|\bpower[- ]cap\b(?!\s?(?:is\s|of\s|at\s|set\sto\s|=|:)?\s?~?\d)|\bpower[- ]throttl\w*|\bpower[- ]limit(?:ed|ing)\b", re.I)),
    ("applications_clocks_setting", re.compile(r"\bApplications?[ _]Clocks?[ _]Setting\b", re.I)),
    ("thermal", re.compile(r"\bthermal(?:ly)?[ -](?:throttl\w*|slowdown)|\bthrottl\w* (?:due to|from|by|because of) (?:heat|temperature)|\boverheat\w*", re.I)),
)
# (the clock by its tools' names too: rocm-smi's SCLK, amdgpu's GFXCLK in pp_dpm_sclk / gpu_metrics)
THROTTLE = re.compile(r"\bthrottl\w*|\b(?:clocks?|SCLK|GFXCLK) (?:speed |frequency )?(?:is |are |stays? |remains? |sits? |gets? |got )?"
                      r"(?:capped|limited|held|drops?|dropped|stuck|locked|reduced)\b|"
                      r"\b(?:clocks?|thermal|power|frequency)\s(?:\w+\s)?slowdown\b|"  # (a bare "6x slowdown" is the speed's)
                      # a power state the GPU does not leave under load ("GB10 low-power stuck-state", "stuck in P8")
                      r"\blow[- ]power (?:stuck[- ])?(?:state|mode)\b|\bstuck (?:in|at) (?:a |the )?(?:low[- ]power|low clocks?|P[5-8]\b|idle\b)|"
                      # a Jetson's nvpmodel power mode, named by its watts ("the 30W power mode", "power mode from 30W to MAXN"):
                      # a power budget below MAXN caps the GPU clock (jetson_clocks / nvpmodel -m 0 lift it)
                      r"\b\d+\s?W (?:power )?mode\b|\bpower mode (?:from |is |was |set to |of |at )?\d+\s?W\b|\bnvpmodel\b", re.I)
GPU_CONTEXT = re.compile(r"\b(?:GPUs?|clocks?|MHz|SM|thermal|power|temperature|nvidia-smi|cards?)\b|°C", re.I)
SECTION_TITLE = re.compile(r"\bclocks?[_ ](?:event|throttle)[_ ]reasons\b(?:\.\w+)*", re.I)
INACTIVE = re.compile(r"^\W{0,6}(?:not active|inactive|no\b|none\b|0 samples|never|false\b)", re.I)
# "not bandwidth or the power cap"; a reading set under the point where a reason starts ("70-76 °C, well below thermal
# throttle (80 °C)") says the reason is not reached ("under" is not one: "under thermal throttling" is in it)
NEGATED = re.compile(r"\b(?:no|not|never|without|zero|below|beneath)\s(?:\w+\s)?(?:(?:or|nor)\s(?:the\s)?)?$", re.I)
# the host CPU: the API server, tokenizer or scheduler holding the GPU back
# ... and a reading either side of its name: "the CPU utilization of the python process reaches 100%", "the
# llama-server process has 100% CPU usage" (top's %CPU column, psutil's cpu_percent: 100 is one core held busy)
_CPU_TERM = r"\b(?:CPU|core|API server|api_server|tokeni[sz]er)\b"
_CPU_AFTER = r"\s?%\s(?:of\s(?:a|one|the)\s)?(?:single\s)?(?:CPU|core)\b(?![- ](?:offload|RAM|memory|threads?))"
# ... or a process or thread "pegged" (htop's word for one core held at 100 %: "completely pegging the main python process")
CPU = re.compile(r"\bCPU[- ]bound\b|\bCPU[- ]bottleneck\w*|\bbottleneck (?:is|was) (?:the )?(?:host )?(?:CPU|tokeni[sz]\w+|API server|scheduler)\b|"
                 r"\b(?:CPU|core)\b[^.]{0,20}?\b(?:is |are |gets? |got )?(?:maxed(?: out)?|pinned|saturated|pegged)\b|"
                 r"\b(?:Python )?GIL\b[^.]{0,40}?\b(?:limit\w*|bound|bottleneck\w*|contention)\b|"
                 r"\b(?:scheduler|scheduling|Python|host|CPU)[ -](?:side )?overhead\b[^.]{0,30}?\b(?:dominat\w*|is the bottleneck|takes most)|\b(?:de)?tokeni[sz]\w*\b[^.]{0,30}?\b(?:takes? (?:most|the majority|\d+\s?%)|"
                 r"dominat\w*|is the bottleneck)|\bpegg(?:ed|ing|s)\b[^.]{0,30}?\b(?:process|thread|core)\b|\bbottleneck\w* (?:on|by|in) (?:the )?(?:CPU|tokeni[sz]\w+|API server)\b|"
                 + _CPU_TERM + r"[^.]{0,40}?\b(?:(?:at|pegged at|stays? at|maxed at|hits?|uses?|using)\s(?:~|about\s|around\s)?(?:\d|max|full)|100\s?%)|"
                 + _CPU_TERM + r"[^.%]{0,60}?\b(?:9\d|100)(?:\.\d+)?\s?%|\b(?:9\d|100)(?:\.\d+)?" + _CPU_AFTER + "|"
                 # more compute threads than cores: hyperthreads (logical cores) oversubscribed, the threads share cores
                 r"\boversubscri\w*\b[^.]{0,60}?\b(?:threads?|cores?|CPUs?)\b|\b(?:threads?|cores?|CPUs?|hyper-?thread\w*)\b[^.]{0,60}?\boversubscri\w*|"
                 r"\b(?:logical|physical) (?:cores|CPUs|processors)\b[^.]{0,40}?\b(?:instead of|rather than) (?:the )?(?:logical|physical) (?:cores|CPUs)\b", re.I)
# the engine's API server against its offline path on the same GPU ("the `LLM` class reaches 90~100% GPU utilization,
# while the API server can only utilize 50%"): what differs is the server's Python work (HTTP, detokenising, scheduling)
SERVER_PATH = re.compile(r"\b(?:API server|api_server|OpenAI[- ](?:compatible |API )?server|online serv\w+|FastAPI|HTTP server)\b", re.I)
OFFLINE_PATH = re.compile(r"`LLM`|\bLLM class\b|\b(?:LLM|llm)\.generate\b|\boffline (?:inference|mode|engine|path|batch\w*)\b", re.I)
PATH_GAP = re.compile(r"\b(?:only|slower|lower|less|half|fewer)\b|(?<![\w.])\d+(?:\.\d+)?x\b", re.I)
CPU_PERCENT = re.compile(_CPU_TERM + r"[^.%]{0,60}?" + _NUM + r"\s?%|" + _NUM + _CPU_AFTER, re.I)
# requests served one at a time, not batched: the scheduler's cap (vLLM max_num_seqs, SGLang max_running_requests,
# llama-server's --parallel slots) or a client that sends one request at a time
BATCH = re.compile(r"\b(?:requests?|prompts?|calls?|queries|users?)\b[^.]{0,50}?\b(?:one (?:request )?at a time|one by one|one after (?:the )?other|one after another|"
                   r"sequentially|serially|serialized|in series)\b|\bnot (?:being )?batched\b|\bno (?:continuous |dynamic )?batching\b|"
                   r"\bone (?:request|prompt|generation|query|completion) at a time\b|"
                   r"(?:\bnot|n't) (?:\w+ )?(?:handle|process|serve|support|run)\w* (?:\w+ )?(?:concurrent|parallel|simultaneous|multiple) "
                   r"(?:requests?|prompts?|calls?|queries|users?)\b|"
                   r"\b(?:second|next|other) (?:requests?|prompts?|calls?) (?:waits?|waited|waiting|blocks?|is blocked) (?:until|for)\b|"
                   r"\bbatching (?:does not|doesn't|is not|isn't|did not|didn't) (?:work|happen|help|improve|scale)|"
                   # the server said not to batch what runs at once ("it interleaves concurrent decodes, it does not batch
                   # them"), or its aggregate said flat across concurrency levels
                   r"\b(?:does not|doesn't|do not|don't|did not|didn't|never|cannot|can't) (?:actually |really )?batch(?:es)?\b(?![ -]size)|"
                   r"\binterleav\w* (?:\w+ ){0,3}(?:instead of|rather than) batch\w*|"
                   r"\baggregate (?:output |token |decode )?(?:throughput |output |tok/s |speed )?(?:is |stays |remains )?flat\b|"
                   r"\b(?:throughput|tokens?/s|speed)\b[^.]{0,40}?\b(?:does not|doesn't|did not|didn't|never|won'?t) (?:scale|increase|grow|improve)\b|"
                   # the same throughput at any concurrency ("stays the same whether 1 or 8 clients send requests")
                   r"\b(?:throughput|tokens?/s|tok/s|QPS|speed)\b[^.]{0,40}?\b(?:stays?|remains?|is|was|stayed|remained) (?:about |roughly )?(?:the same|flat|unchanged)\b"
                   r"[^.]{0,40}?\b(?:concurren\w*|clients?|users?|streams?|parallel|requests)\b|"
                   r"\bdoes(?: not|n't) scale with (?:concurrency|concurrent|more (?:requests|users|clients|parallel))|"
                   # a cap on how many run at once, said of the requests ("the request only capped at the --parallel n")
                   r"\b(?:requests?|concurren(?:cy|t requests?))\b[^.]{0,30}?\b(?:only |always |never (?:gets? )?(?:past|above) )?capped at\b", re.I)
AT_ONCE = re.compile(r"\bonly (\d+) (?:(?:requests?|reqs?|sequences?|seqs?|of them) )?(?:are |get |is )?(?:running|run|processed|served|scheduled|batched)"
                     r"(?: at once| at a time| concurrently| in parallel| together)?", re.I)
# more GPUs slower than fewer: tensor parallelism's all-reduce every layer, over PCIe when there is no NVLink
# a second card added to one ("slowed down to 300 tokens/sec when adding a second 3090"): set against that one card
SECOND_GPU = r"\b(?:add(?:ing|ed|s)?|plug(?:ging|ged)? in|us(?:ing|e)|with) (?:a|the|another) second (?:GPU|card|(?:RTX )?\d{4}\w*|[A-Z]\d{2,4}\w*)\b"
_SLOWED = r"\b(?:slower|slowdown|slow(?:s|ed)? down|worse)\b"  # (a latency that "drops" with the second card is the gain)
TP_SLOWER = re.compile(_SLOWED + r"[^.]{0,80}?" + SECOND_GPU + "|" + SECOND_GPU + r"[^.]{0,80}?" + _SLOWED + "|"
                       r"(?:\btensor[ _-]?parallel\w*|\bTP\s?=?\s?[2-9]\b|\bmulti(?:ple)?[ -]GPUs?\b|\b(?:[2-8]|two|four|eight) (?:GPUs|cards)\b)"
                       r"[^.]{0,80}?\b(?:slower|slowdown|slow(?:s|ed)? down|no faster|not faster|worse|(?:does not|doesn't|did not|didn't) (?:speed|help|improve|scale)|"
                       # "tp2 latency is greater than tp1": the latency itself said larger
                       r"(?:latency|TTFT|ITL|TPOT|time)\s(?:is\s|was\s|gets\s|got\s)?(?:greater|higher|larger|longer|bigger)\s(?:than)?)", re.I)
# ... or no faster: "setting this to 1 or 8 doesn't change performance much", "the same throughput with TP 8" (said with
# several GPUs in the sentence)
NO_GAIN = re.compile(r"\b(?:does not|doesn't|did not|didn't|won't|does|did)(?: not)? (?:really )?change (?:the )?(?:performance|throughput|speed)\b|"
                     r"\b(?:the )?(?:same|similar|no better|no higher) (?:throughput|performance|speed|tokens?/s)\b|\bno (?:speed-?up|gain)\b|"
                     r"\b(?:throughput|performance|speed|tokens?/s)\b[^.]{0,40}?\b(?:is|was|stays?|remains?) (?:about |roughly |basically |exactly )?"
                     r"(?:the same|identical|unchanged)\b", re.I)
# against one GPU: a model that ran on one GPU fits one, and TP over more is larger than it needs (replicas would serve more)
ONE_GPU = re.compile(SECOND_GPU + r"|\b(?:single|one|1)[ -]?(?:GPU|card|device)s?\b|\b(?:TP|tp[-_]size|tensor[-_ ]parallel[-_ ]size)\s?[=:]?\s?1\b(?!\d|\.\d)|"
                     r"\bthan without\b|\bwithout (?:TP|tensor[ _-]?parallel\w*)\b|\b1 (?:or|and|vs\.?|versus|to) (?:[2-9]|16)\b", re.I)
# GPUs the engine was given that do nothing ("the other 3 GPUs stay idle", "vLLM only uses one of them", "only GPU 0 is
# busy"), and tensor parallelism said to span machines: perf.tp_mismatch's "idle GPUs" and "TP across nodes"
IDLE_GPUS = re.compile(r"\b(?:the )?(?:other|remaining|rest of the)\s(?:\d+\s|two\s|three\s|seven\s)?(?:GPUs|cards)\b[^.]{0,30}?\b(?:idle|unused|"
                       r"(?:at|show|shows|stay at|sit at) 0\s?%|do(?:es)? nothing|(?:are|is|stay|remain) empty)|"
                       r"\bonly (?:uses?|using|utili[sz]es?|utili[sz]ing|runs? on) (?:one|1|a single|the first|GPU\s?\d)(?: GPU)?\b(?: of (?:them|the \d+|my \d+))?|"
                       r"\bonly (?:GPU\s?\d|one GPU|one card|the first GPU) (?:is |gets? )?(?:used|busy|utili[sz]ed|loaded|working)\b", re.I)
TP_NODES = re.compile(r"\b(?:tensor[ _-]?parallel\w*|TP\s?=?\s?\d+)\b[^.]{0,30}?\b(?:across|over|spanning|between)\s(?:the\s)?(?:two|2|multiple|several|\d+)\s"
                      r"(?:nodes|machines|hosts|servers)\b", re.I)
# scaling said as two factors: "about 6x the throughput for 8x the compute" (more GPUs, less than as much more served: the
# parallel split is larger than the model needs; replicas would scale by the GPUs)
SCALING = re.compile(r"(?<![\w.])(?P<got>\d+(?:\.\d+)?)\s?x\s(?:the\s)?(?:through\s?put|speed|performance|tokens?/s|tok/s|requests?/s)\b"
                     r"[^.]{0,30}?\b(?:for|with|on|from|using)\s(?:the\s)?(?P<paid>\d+(?:\.\d+)?)\s?x\s(?:the\s)?(?:compute|GPUs|cards|nodes|hardware|devices)\b", re.I)
# two TP sizes with a throughput each, in one sentence ("4067 tokens/s at tp=4 against 2822 at tp=8", "tp 2 gives 40
# tok/s while tp 1 gives 55 tok/s"): the size by its flag's names, the throughput with its unit (or a bare number set
# against one: "against 2822")
TP_SIZE = re.compile(r"(?<![\w.-])-{0,2}(?<![\w.])(?:tp|tp_size|tensor[-_ ]parallel(?:[-_ ]size)?)\s?[=:]?\s?(\d{1,2})(?![\d.])", re.I)
THROUGHPUT = re.compile(r"(?<![\w.])(?P<n>\d[\d,]*(?:\.\d+)?)\s?(?:\w+\s)?(?:tok(?:en)?s?/s(?:ec)?|t/s|tokens? per second|tps|"
                        r"req(?:uest)?s?/s|QPS)(?![\w/])|"
                        r"\b(?:against|versus|vs\.?|compared (?:to|with))\s(?:~|about\s)?(?P<bare>\d[\d,]*(?:\.\d+)?)(?![\d.,]|\s?(?:%|x\b|ms|s\b|GB|GiB|MB|GPUs?|cards?))",
                        re.I)
NO_MORE = 1.15  # a wider TP giving at most this many times a narrower one's throughput: the added GPUs buy nothing
SCALING_SHARE = 0.85  # under this share of the GPUs added, served throughput does not keep up with them
# the batch cap by the engine's own flag name, set to a number: vLLM max_num_seqs, SGLang max_running_requests, TGI
# --max-batch-size (the env spelling MAX_NUM_SEQS=4 of a recipe too; perf.batching judges the value)
BATCH_CAP = re.compile(r"(?<![\w'\"-])-{0,2}(?P<cap_name>max[-_]num[-_]seqs|max[-_]running[-_]requests|max[-_]batch[-_]size)"
                       r"['\"`]?\s?(?:(?:is |was )?set to|=|:|is|was|of|at)?\s?['\"`]?(?P<cap>\d+)(?![\w%]|\.\d)", re.I)
CAP_ENGINES = {"max_num": "vllm", "max_run": "sglang", "max_bat": "tgi"}
# vLLM's weight offload by its flag name (`--cpu-offload-gb 35`): perf.engine_log judges the value
CPU_OFFLOAD = re.compile(r"(?<![\w'\"-])-{0,2}cpu[-_]offload[-_]gb['\"`]?\s?(?:(?:is |was )?set to|=|:|of|is|was)?\s?['\"`]?(?P<gib>\d+(?:\.\d+)?)(?![\w%]|\.\d)", re.I)
# CUDA graphs off, in the engines' own words: vLLM --enforce-eager / enforce_eager=True ("eager mode"), SGLang
# --disable-cuda-graph and its decode stat line's "cuda graph: False" (a batch above --cuda-graph-max-bs runs eager),
# TGI --cuda-graphs 0; and the plain words ("CUDA graphs disabled", "without CUDA graph", "falls back to eager")
EAGER = re.compile(r"(?<![\w-])--enforce[-_]eager\b|\benforce_eager\s?[=:]\s?['\"`]?True\b|(?<![\w-])--disable[-_]cuda[-_]graph(?![-\w])|"
                   r"\bdisable_cuda_graph\s?[=:]\s?['\"`]?True\b|\bcuda[ _]graph\s?:\s?False\b|(?<![\w-])--cuda[-_]graphs[ =]['\"]?0['\"]?(?![\w,])|"
                   r"\b(?:disabl\w*|turn(?:s|ed|ing)? off|without|no)\s(?:the\s)?(?:CUDA[ -]?graphs?|cudagraphs?)\b|"
                   r"\b(?:CUDA[ -]?graphs?|cudagraphs?)\s(?:(?:are|is|were|was|got|get|gets)\s)?(?:disabled|off|not (?:captured|used|enabled))\b|"
                   r"\b(?:falls?|fell|falling) back to eager\b|\b(?:runs?|ran|running) (?:in )?eager\b|\beager (?:mode|execution|decod\w*)\b", re.I)
# the CUDA graph capture ceiling said raised with a speed-up ("ran substantially faster when the CUDA graph capture
# ceiling was raised from 512 to 1024"): the decode batches above the old ceiling ran eager. vLLM's
# max_cudagraph_capture_size (before it the last of cudagraph_capture_sizes), SGLang's --cuda-graph-max-bs
_CAPTURE_TERM = (r"(?P<term>max[_-]cudagraph[_-]capture[_-]size|cuda[_-]graph[_-]max[_-]bs|cudagraph[_-]capture[_-]sizes|"
                 r"(?:CUDA[ -]?graphs?|cudagraphs?)\s(?:capture\s)?(?:ceiling|limit|max(?:imum)?(?: batch)? size|sizes?))[`'\"]?")
_RAISE = r"(?:raised|increased|bumped|raising|increasing|going|went|moved|raise|increase|bump)"
_FROM_TO = r"from\s[`'\"]?(?P<was>\d+)[`'\"]?\s?(?:to|->|→)\s?[`'\"]?(?P<now>\d+)\b"
CAPTURE_RAISED = (re.compile(_CAPTURE_TERM + r"(?:[^.]|\.(?=\d)){0,40}?\b" + _RAISE + r"\s(?:it\s)?" + _FROM_TO, re.I),
                  re.compile(r"\b" + _RAISE + r"\s(?:the\s)?`?" + _CAPTURE_TERM + r"\s" + _FROM_TO, re.I))
CAPTURE_WORDS = re.compile(_CAPTURE_TERM.replace("(?P<term>", "(?:"), re.I)  # the term alone (the prefilter's)
# Ollama unloading an idle model (keep_alive, OLLAMA_KEEP_ALIVE: 5 minutes by default, envconfig) so the next request pays
# the load: "a request after an idle gap took 104 s, the immediate rerun 1.5 s" said with the unload as the cause
KEEP_ALIVE = re.compile(r"\b(?:OLLAMA_)?KEEP_ALIVE\b|\bkeep[ -]alive\b(?! (?:connection|header|timeout)s?\b)", re.I)
UNLOADED = re.compile(r"\bunload\w*|\breload\w*|\b(?:loads?|loading|loaded) (?:the model |it )?again\b|\bcold[ -]?(?:start|load)\w*|언로드|다시 올리|卸载|重新加载", re.I)
COLD_SPREAD = 10.0  # the first request after idle this many times the warm one: the load, not the generation
FASTER = re.compile(r"\bfaster\b|\bspeed-?ups?\b|\bsped up\b|\bimprov\w*|\+\d+(?:\.\d+)?\s?%|\b(?:higher|more) throughput\b|\b\d+(?:\.\d+)?x (?:the )?throughput\b", re.I)
EAGER_NEGATED = re.compile(r"\b(?:not|never|no longer|without)\s(?:\w+\s)?(?:in\s)?$", re.I)  # "not in eager mode", "without --enforce-eager"
# the GPUs' path for TP traffic said to be slow, in the words of the engines and NCCL: vLLM/SGLang's custom all-reduce
# "not supported on more than two PCIe-only GPUs" / disabled for want of P2P, NCCL_P2P_DISABLE=1, and the plain words:
# no NVLink / PCIe only / P2P not supported between the GPUs (NCCL's own transport lines, "via SHM" and "NET/Socket",
# are log events perf.interconnect judges with the nodes and GPUs they join)
LINK_SLOW = re.compile(r"\bnot supported on more than two PCIe-only GPUs\b|\bcustom[ _-]?all[ _-]?reduce\b[^.]{0,40}?\b(?:disabled|not supported|off)\b|"
                       r"\bNCCL_P2P_DISABLE\s?=\s?['\"]?1\b|"
                       r"\b(?:P2P|peer[ -]to[ -]peer|peer access)\b[^.]{0,30}?\b(?:(?:is |are )?not (?:supported|available|enabled|possible)|"
                       r"(?:is |are )?disabled|unsupported|unavailable)\b|"
                       r"\b(?:no|without|lacks?|lacking) NVLink\b|\bPCIe[- ]only\b|"
                       # NCCL's network transport said to be TCP where RDMA was meant ("NCCL falling back to Socket transport
                       # instead of InfiniBand"): its NET/Socket against NET/IB
                       r"\b(?:fall(?:s|ing)?|fell) back to (?:the )?(?:TCP )?(?:sockets?|Ethernet|NET/Socket)\b|"
                       r"\b(?:sockets?|TCP|Ethernet|NET/Socket)(?: transport)? instead of (?:the )?(?:IB|InfiniBand|RoCE|RDMA|EFA|NET/IB)\b|"
                       # nvidia-smi topo -m's NODE and SYS: the path crosses the host bridges or the sockets' interconnect
                       r"\b(?:on |in )?different (?:PCIe )?(?:root[ -]complex(?:es)?|root ports?|host bridges|CPU sockets|sockets|NUMA nodes)\b|"
                       r"\bacross (?:the )?(?:PCIe )?(?:host bridges|root[ -]complex(?:es)?|CPU sockets|NUMA nodes|QPI|UPI)\b|\bcross[- ]socket\b", re.I)
# nccl-tests' own measure of the link, said in words: "all_gather_perf reaches only ~3 GB/s busbw", "(nccl-tests busbw): 98 Gb/s
# single-HCA -> 161 Gb/s with both HCAs". busbw is nccl-tests' name (src/common.cu's header "algbw busbw", "Avg bus
# bandwidth"); the tests print GB/s (bytes), a NIC is rated in Gb/s (bits): both spellings are read, case kept apart
BUSBW_TERM = re.compile(r"\bbusbw\b|\bbus[ -]bandwidth\b|\b(?:all_reduce|all_gather|reduce_scatter|alltoall|sendrecv|broadcast|reduce)_perf\b", re.I)
BANDWIDTH = re.compile(r"(?<![\w.])~?(\d+(?:\.\d+)?)\s?(GB/s|GiB/s|Gb/s|Gbps|Gbit/s)(?![\w/])")
BANDWIDTH_LOW = re.compile(r"\b(?:only|just|barely|caps?|capped|capping|plateau\w*|stuck|tops? out|half|regardless)\b", re.I)
BETTER = re.compile(r"\s?\*{0,2}\s?(?:[^\s\d]{1,30}\s){0,4}?(?:→|->|=>|vs\.?|versus|against|to)\s\*{0,2}~?", re.I)  # "98 Gb/s single-HCA → 161 Gb/s"
MULTI_GPU = re.compile(r"\b(?:tensor[ _-]?parallel\w*|TP\s?=?\s?\d|tp[-_]size|all[ -]?reduce|NCCL|multi(?:ple)?[ -]GPUs?|GPUs|cards|ranks?)\b|"
                       r"\b(?:two|three|four|eight|[2-9]|1[0-6])\s?x?\s?(?:GPUs?|cards|[A-Z]\d{2,4}\w*)", re.I)
# the share of GPU memory the engine takes, by the engine's own flag name: vLLM gpu_memory_utilization,
# SGLang mem_fraction_static, TGI cuda_memory_fraction (what perf.memory_headroom judges)
MEMORY_SHARE = re.compile(r"(?<![\w'\"-])-{0,2}(?P<name>gpu[-_ ]memory[-_ ]utili[sz]ation|mem[-_ ]fraction[-_ ]static|cuda[-_ ]memory[-_ ]fraction)"
                          r"['\"`]?\s?(?:(?:is |was )?set to|=|:|of|to|at|is|was)?\s?['\"`]?(?P<share>0?\.\d+|1(?:\.0+)?)(?![\w%]|\.\d)", re.I)
MEMORY_ENGINES = {"gpu": "vllm", "mem": "sglang", "cud": "tgi"}
# ... and an OOM the person ties to that share: they lowered it and the OOM went away ("the OOM could be solved when
# reduce gpu_memory_utilization from 0.96 to 0.8"), or they name it too high as the cause ("Setting
# gpu-memory-utilization too high can cause OOM"). The engines' names of the share: vLLM gpu_memory_utilization, SGLang
# mem_fraction_static, TGI cuda_memory_fraction, LMDeploy cache_max_entry_count, TensorRT-LLM
# kv_cache_free_gpu_mem_fraction (KvCacheConfig.free_gpu_memory_fraction)
CURE_SHARE = re.compile(r"(?<![\w-])-{0,2}(?P<share_name>gpu[-_ ]memory[-_ ]utili[sz]ation|mem[-_ ]fraction[-_ ]static|cuda[-_ ]memory[-_ ]fraction|"
                        r"cache[-_ ]max[-_ ]entry[-_ ]count|(?:kv[-_]cache[-_])?free[-_]gpu[-_]mem(?:ory)?[-_]fraction)\b", re.I)
CURE_ENGINES = {"gpu": "vllm", "mem": "sglang", "cud": "tgi", "cac": "lmdeploy", "kv_": "trtllm", "fre": "trtllm"}
OOM_WORDS = re.compile(r"\bOOM(?:s|ed|ing)?\b|\bout[ -]of[ -]memory\b|\bOutOfMemory\w*|\bmemory pressure\b|\bcudaErrorMemoryAllocation\b|"
                       r"\bno (?:memory )?headroom\b|显存不足|内存不足", re.I)
LOWERED = re.compile(r"\b(?:lower(?:s|ed|ing)?|reduc(?:e|es|ed|ing)|decreas(?:e|es|ed|ing)|dropp?(?:ed|ing)?|turn(?:s|ed|ing)? down|"
                     r"dial(?:s|ed|led|ing)? (?:it )?(?:back|down))\b|降低|调低|减小", re.I)
TOO_HIGH = re.compile(r"\btoo (?:high|large|big|much|aggressive)\b|\bno (?:memory )?headroom\b", re.I)
# ... or the share set to a value that is said to cause the OOM ("Setting ...gpu_memory_utilization to 0.7 would cause OOM")
CAUSES_OOM = re.compile(r"(?:[^.]|\.(?=\d)){0,40}?\b(?:caus(?:e|es|ed|ing)|leads? to|led to|results? in|resulted in|triggers?|triggered)\s(?:an?\s)?(?:CUDA\s)?"
                        r"(?:OOMs?\b|out[ -]of[ -]memory)", re.I)
FROM_TO = re.compile(r"\bfrom\s?[`'\"]?(0?\.\d+|1\.0+)[`'\"]?\s?(?:to|->|→)\s?[`'\"]?(0?\.\d+)(?![\w%]|\.\d)", re.I)
SHARE_VALUE = re.compile(r"(?<![\w.])(?P<to>to\s?[`'\"]?)?(0?\.\d+|1\.0+)(?![\w%]|\.\d)", re.I)
# ... and the imperative that gives advice: "To avoid OOM on a 24 GB card, lower --gpu-memory-utilization" (a sentence that opens
# with its purpose, or a bare verb after a comma)
ADVICE = re.compile(r"\b(?:try|trying|should|please|maybe|perhaps|recommend\w*|suggest\w*|you can|you could|consider)\b|"
                    r"^(?:to (?:avoid|prevent)|lower|reduce|decrease|set)\b|[,;:]\s(?:lower|reduce|decrease|set|use)\s", re.I)
# the GPUs doing little: nvidia-smi's "Volatile GPU-Util" / utilization.gpu, DCGM's GPU utilisation, amdgpu's sysfs
# gpu_busy_percent (what radeontop/amdgpu_top read), rocm-smi's "GPU use (%)", GPU-Z's and Task Manager's "GPU Load";
# and the words the other way round ("load GPU 5-10%", "30% utilization of the GPU", "the GPU is only 30% utilized")
GPU_UTIL = re.compile(r"\bGPU[- ]?(?:util\w*|usage|load|activity|busy|use)\b|\butilization\.gpu\b|\bVolatile GPU-Util\b|\bgpu_busy_percent\b|"
                      r"\b(?:load|usage|utili[sz]ation|busy) (?:of |on )?(?:the )?GPUs?\b|"
                      r"\bGPUs?\s(?:(?:is|are|was|were|stays?|sits?|runs?)\s)?(?:only\s|just\s|barely\s|at\s|around\s|about\s)*"
                      r"(?=~?\d+(?:\.\d+)?\s?%\s(?:utili[sz]\w*|busy|load\w*|used|usage))", re.I)
LOWEST = re.compile(r"\b(?:only|just|barely|merely)\s(?:at\s|about\s|around\s)?~?$", re.I)  # "99% for A and only 55% for B": the 55
# layers a GGUF runner put on the GPU, as llama.cpp prints them ("offloaded 27/43 layers to GPU") and people say them
# ("only 27 layers are offloaded on GPU ... all 43 layers"): the rest run on the CPU
LAYERS = re.compile(r"\b(?P<done>\d+)\s?(?:/|of|out of)\s?(?P<all>\d+) layers?\b[^.]{0,40}?\b(?:offload\w*|on (?:the )?GPU)|"
                    r"\bonly (?P<only>\d+) layers? (?:are |were |is |was |get |got )?(?:being )?(?:offloaded|loaded|put|placed)\b"
                    r"[^.]{0,80}?\ball (?P<total>\d+) layers\b", re.I)
LOW_WORDS = re.compile(r"\b(?:low|only|never (?:exceeds|goes above|gets above)|under-?utili[sz]\w*|idle|barely|stays? (?:at|below|under))\b", re.I)

# a sentence that states no problem: a question, advice, a possibility, an improvement already made; but
# "why is it so slow?" reports the problem it asks about (the family's own words must still say which)
# ("when" opens a statement as often as a question: "When running inference the CPU is at 100 %." needs its "?")
QUESTION = re.compile(r"\?\s*$|^(?:how|why|what|is|are|does|do|can|could|should|would|will|which|where)\b", re.I)
QUESTION_OPENS = re.compile(r"^(?:how|why|what|is|are|does|do|can|could|should|would|will|which|where)\b", re.I)
CLAUSE = re.compile(r",\s|;\s|\s{2,}")  # where a question tacked onto a statement begins
COMPLAINT = re.compile(r"\bwhy (?:is|are|does|do|did|only)\b", re.I)  # "why only two requests ...?" states the two
NOT_A_PROBLEM = re.compile(r"\b(?:to (?:avoid|prevent|reduce|improve|get)|should|recommend\w*|consider|try (?:to|setting|using|adding)|"
                           r"if you|you can|you could|might|would|in case|as expected|is normal|"
                           r"improved|reduced|dropp?ed (?:to|from)|down to|fix(?:es|ed)|after (?:enabling|adding|setting|upgrading|switching))\b", re.I)
# a row of `nvidia-smi -q` (`    SW Power Cap      : Active`) or a /metrics sample: another reader's
TOOL_ROW = re.compile(r"^\s*[A-Z][\w .()/-]*?\s{2,}:\s|^[a-z_:]+(?:\{[^}]*\})?\s+[-\d.e+]+\s*$|^\s*#\s*(?:HELP|TYPE)\s")
STRUCT = re.compile(r"(?:['\"]\w+['\"]\s?:\s?[^,\s]+[,}]\s?){2,}|(?:\w+\s?[:=]\s?[^,\s]+,\s?){3,}")  # `name: value, name: value, ...`: a program printed it
FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]+")
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z(*`\"'\-])|(?<=[a-z)])[.!?]\s*$")
SGLANG_TERMS = re.compile(r"#queue-req|#running-req|token usage|radix|sglang", re.I)
VLLM_TERMS = re.compile(r"vllm|GPU KV cache usage|gpu_cache_usage_perc|kv_cache_usage_perc|Prefix cache hit rate|num_requests_waiting", re.I)


@dataclass
class _Sentence:
    where: str
    text: str


def into_facts(source: str, text: str, facts: Facts) -> bool:
    """The perf statements of a text into facts.stated, and their numbers into facts.metrics (a
    scrape or the log's own stat lines keep theirs). True when the text stated one."""
    found = redacted(statements(source, text))
    if not found:
        return False
    facts.stated += found
    engine = "sglang" if SGLANG_TERMS.search(text) else "vllm" if VLLM_TERMS.search(text) else ""
    _deployment(found, facts)
    metrics = _metrics(found, engine)
    if metrics is not None:
        m = facts.metrics
        if m is None or not m.available:
            facts.metrics = metrics
        else:
            for k, v in metrics.values.items():
                m.values.setdefault(k, v)
            for k, raw in metrics.raw.items():
                m.raw.setdefault(k, raw)
    return True


def redacted(found: list[_T]) -> list[_T]:
    """The statements with their sentences redacted: a person's sentence may hold a key or a token; it is
    evidence, never output as typed."""
    from llm_doctor.redact import Redactor

    redactor = Redactor()
    for st in found:
        st.text = redactor.text(st.text)
    return found


def statements(source: str, text: str) -> list[PerfStatement]:
    out: list[PerfStatement] = []
    for sentence in _sentences(source, text):
        if (asked := _stated_part(sentence.text)) is None:
            continue
        sentence.text = asked
        if (cure := _memory_cure(sentence)) is not None:  # (said with "reduced", "fixed": NOT_A_PROBLEM's words)
            out.append(cure)
            continue
        if out and _cured_next(out[-1], sentence):
            continue
        if (cold := _cold_reload(sentence)) is not None:  # (a fix is said beside it often: not a question of NOT_A_PROBLEM)
            out.append(cold)
            continue
        if (raised := _capture_raised(sentence)) is not None:  # (said with "improved": NOT_A_PROBLEM's word)
            out.append(raised)
            continue
        if _not_a_problem(sentence.text) or (
                len(FLAG.findall(sentence.text)) >= 2 or STRUCT.search(sentence.text)):  # a command line, printed arguments: engine_args reads them
            continue
        out += [s for s in (_kv(sentence), _prefix(sentence), _latency(sentence), _throttle(sentence), _cpu(sentence),
                            _layers(sentence) or _offload_gb(sentence) or _gpu_util(sentence), _batching(sentence) or _batch_cap(sentence), _memory(sentence), _eager(sentence)) if s is not None]
        out += [pair] if (pair := _tp_pair(sentence)) is not None else _tp_slower(sentence)
        if (link := _busbw(sentence)) is not None and not any(st.code == link.code and st.where == link.where for st in out):
            out.append(link)
        if len(out) >= MAX_STATEMENTS:
            break
    return _repeated_cache_misses(source, text) + _cap_sweep(source, text) + _latency_spread(source, text) + _share_runs(source, text) + out


# a speed that drops ("slowed down to 300 tokens/sec", "drops from 80/sec down to 20/sec") is the complaint, where a
# latency "dropped to" or "down to" is the improvement NOT_A_PROBLEM means
FALLEN = re.compile(r"^(?:dropp?ed (?:to|from)|down to)$", re.I)
_RATE = r"[\d.,]+\s?(?:tokens?|tok|t)?/s(?:ec)?\b"
SPEED_FELL = re.compile(r"\b(?:slow(?:s|ed)? down|drops?|dropped|falls?|fell)\s(?:from\s" + _RATE + r"\s)?(?:down\s)?to\s" + _RATE, re.I)


def _not_a_problem(text: str) -> bool:
    said = [m.group(0) for m in NOT_A_PROBLEM.finditer(text)]
    return bool(said) and not (SPEED_FELL.search(text) and all(FALLEN.match(w) for w in said))


def _stated_part(text: str) -> str | None:
    """What a sentence states: all of it, or, where a question is tacked on after a comma ("... world_size =8 total
    latency: 115sec, it shouldn't be faster?"), the clauses before the question, which still report what was seen;
    None for a sentence that opens as a question (it states nothing) unless it asks why about what it states."""
    if not QUESTION.search(text) or COMPLAINT.search(text):
        return text
    if QUESTION_OPENS.match(text):
        return None
    cut = max((m.start() for m in CLAUSE.finditer(text)), default=-1)
    return text[:cut].rstrip() if cut > 0 else None


def _sentences(source: str, text: str) -> list[_Sentence]:
    """A person's sentences: runs of lines with no log level, joined across hard wraps, cut at
    sentence ends; each with the line it starts on."""
    out: list[_Sentence] = []
    para: list[tuple[int, str]] = []

    def flush() -> None:
        if para:
            joined = " ".join(t for _, t in para)
            offsets, pos = [], 0
            for no, t in para:
                offsets.append((pos, no))
                pos += len(t) + 1
            start = 0
            for piece in SENTENCE_END.split(joined) + [""]:
                if piece.strip() and len(piece) <= MAX_SENTENCE:
                    at = joined.find(piece, start)
                    no = max((n for p, n in offsets if p <= max(at, 0)), default=para[0][0])
                    out.append(_Sentence(f"{source}:{no}", piece.strip()))
                start += len(piece)
            para.clear()

    lines = text.splitlines()
    near = _near_terms(lines)
    header: list[str] = []  # the cells of the markdown table's header row that names a measure
    for no, raw in enumerate(lines, 1):
        row = _cells(raw)
        if row is None:
            header = []
        elif no >= 2 and TABLE_RULE.match(raw) and (above := _cells(lines[no - 2])):
            header = above if ANY_TERM.search(" ".join(above)) else []
            continue
        elif header:  # a row under a header: each cell is read with its column's name ("cache hit rate 0%")
            flush()
            said = "; ".join(f"{h} {c}" for h, c in zip(header, row, strict=False) if h and c)
            if said and len(said) <= MAX_SENTENCE:
                out.append(_Sentence(f"{source}:{no}", said))
            continue
        if no not in near:
            flush()
            continue
        line = normalise(no, raw.encode("utf-8", errors="replace"))
        words = line.text.strip().strip("*_>-#|` ").strip()
        if not words or line.level or TOOL_ROW.match(raw) or raw.rstrip().endswith("\\") or any(
                lit in raw.lower() for lit in stat_lines.LOWER_LITERALS):  # (a `\`-continued line is a command's)
            flush()
            continue
        para.append((no, " ".join(raw.strip().strip("*_>-#").split())))
        if raw.strip().startswith("|") or len(para) > 20:  # a markdown table row is a sentence of its own
            flush()
    flush()
    return out


TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")  # markdown's |---|---| below a header


def _cells(raw: str) -> list[str] | None:
    """A markdown table row's cells (markup stripped); None for a line that is no table row."""
    line = raw.strip()
    if not line.startswith("|") or line.count("|") < 3:
        return None
    return [" ".join(c.replace("`", "").replace("**", "").strip().strip("*_").split()) for c in line.strip("|").split("|")]


ANY_TERM = re.compile("|".join(f"(?:{rx.pattern})" for rx in (KV, PREFIX, PREFIX_FLAG_UNSET, TTFT, ITL, SPEED, TIME_FOR_TOKENS, THROTTLE, CPU, OFFLINE_PATH, GPU_UTIL, PREEMPT,
                                                              BATCH, AT_ONCE, TP_SLOWER, SCALING, IDLE_GPUS, TP_NODES, NO_GAIN, MEMORY_SHARE, CURE_SHARE, CPU_OFFLOAD, LAYERS, EAGER, BATCH_CAP, LINK_SLOW,
                                                              BUSBW_TERM, CAPTURE_WORDS, KEEP_ALIVE, TP_SIZE))
                      + "|" + "|".join(f"(?:{rx.pattern})" for _, rx in REASONS), re.I)
WRAP = 4  # lines around a term that may hold the rest of its hard-wrapped sentence
MAX_TERM_LINES = 1000  # different lines holding a term literal: a person's text has a few, the rest of a log is not read
DIGITS = re.compile(r"\d+")
# lower-case literals one of which every term above holds: a line with none of them is not searched (a big
# log is mostly such lines; the terms' regex reads a few hundred KB/s)
TERM_LITERALS = ("kv", "cach", "ttft", "first token", "first-token", "tpot", "itl", "token latency", "output token",
                 "time_to_first", "time_per_output", "tok/s", "t/s", "tokens per", "tokens/s", "tokens in", "to generate", "first output",
                 "ms/tok", "throttl", "slowdown", "clock", "power", "thermal", "overheat", "cpu",
                 "core", "pegg", "gil", "overhead", "bottleneck", "api server", "api_server", "tokeni", "gpu", "utilization", "preempt", "retract", "swapp", "token usage",
                 "token_usage", "sequential", "serial", "at a time", "one by one", "one after", "batch", "scale", "tensor", "parallel",
                 "concurrent", "simultaneous", "wait", "capped at", "oversubscri", "hyperthread", "hyper-thread", "physical cores", "logical cores",
                 "tp=", "tp ", "tp2", "tp4", "tp8", "multi", "idle", "unused", "only use", "only utili", "only gpu", "only one", "only runs", "nodes", "machines", "x the", "through put", "throughput", "cards", "#cached", "apc", "mem_fraction", "mem-fraction", "memory_fraction",
                 "memory-fraction", "cache_max_entry", "cache-max-entry", "free_gpu_mem", "memory_utili", "memory-utili", "memory utili", "offload_gb", "offload-gb", "only ", "layer", "eager", "graph", "max_", "max-", "pcie", "nvlink", "p2p", "peer", "reduce", "root complex", "root-complex", "host bridge", "socket", "numa",
                 "change", "same ", "similar ", "second", "cudagraph", "cuda_graph", "cuda-graph", "keep_alive", "keep-alive", "keep alive", "busbw", "bus bandwidth", "bus-bandwidth", "_perf", "low-power", "low power", "stuck", "offline", "`llm`", "llm class", ".generate", "no better", "no higher", "no speed", "no gain")
_TERMS, _STAT = pf.compile_groups(TERM_LITERALS), pf.compile_groups(stat_lines.LOWER_LITERALS)
TERM_CHUNK = 4096  # lines searched at once for them


def _holding_terms(lines: list[str]) -> list[int]:
    """Numbers (ascending) of the lines holding a TERM_LITERALS literal and no stat line's, lower-cased:
    found by the prefilter's single-first-byte regexes over all the lines at once (C speed; a literal
    test per line and literal was most of the cost of a 4 MB log). The literals are ASCII: in the UTF-8
    of the lower-cased text their bytes are where those characters are, and no newline is added or lost.
    TERM_CHUNK lines at a time: the copies of a 4 MB text (a str of wide characters is 4 bytes each) stay small."""
    numbers = []
    for first in range(0, len(lines), TERM_CHUNK):
        low = "\n".join(lines[first : first + TERM_CHUNK]).lower().encode("utf-8", errors="replace")
        at, no = 0, first + 1
        for start in sorted(pf.line_starts(low, _TERMS) - pf.line_starts(low, _STAT)):
            no += low.count(b"\n", at, start)
            at = start
            numbers.append(no)
    return numbers


def _near_terms(lines: list[str]) -> set[int]:
    """Numbers of the lines within WRAP of one holding a term (the rest of a big log is not read), not
    counting the engines' stat lines."""
    near: set[int] = set()
    seen: set[str] = set()  # a line repeated with other numbers is a program's, read once
    for no in _holding_terms(lines):
        raw = lines[no - 1]
        low = raw.lower()
        masked = DIGITS.sub("0", low)
        if masked in seen:
            continue
        seen.add(masked)
        if len(seen) > MAX_TERM_LINES:
            break
        if normalise(no, raw.encode("utf-8", errors="replace")).level:
            continue  # an engine's log record: a person's words carry no level
        if ANY_TERM.search(raw):
            near.update(range(no - WRAP, no + WRAP + 1))
    return near


# a number that is a change, not a reading: "69% more preemptions", "30% lower throughput"
RELATIVE = re.compile(r"^\s*(?:more|less|fewer|higher|lower|faster|slower|better|worse|increase|decrease|drop|reduction|"
                      r"improvement|speed-?up|of (?:the|all|its|total|requests))\b", re.I)


def _near(rx: re.Pattern[str], text: str, at: re.Match[str]) -> list[re.Match[str]]:
    """Readings of `rx` within NEAR characters after the term, or just before it ("99 % KV cache usage")."""
    # a ";" closes a measure's cell: a table row read with its header is "TTFT p50 287 ms; ITL p50 1.6 ms"
    end = text.find(";", at.end())
    after = [m for m in rx.finditer(text, at.end(), min(len(text), at.end() + NEAR, end if end >= 0 else len(text)))]
    before = [m for m in rx.finditer(text, max(0, at.start() - NEAR // 2, text.rfind(";", 0, at.start()) + 1), at.start())]
    return [m for m in after + before[-1:] if not RELATIVE.match(text, m.end())]


def _count(m: re.Match[str]) -> float:
    """The first group a count regex filled, in digits or in words."""
    said = next(g for g in m.groups() if g)
    return float(COUNT_WORDS.get(said.lower(), 0) or _number(said))


def _number(x: str) -> float:
    """A figure as people write it: "1,043.54" and "13,285" (thousands), "0,95" (a decimal comma)."""
    thousands = "." in x or (x.count(",") and len(x.split(",")[-1]) == 3)
    return float(x.replace(",", "") if thousands else x.replace(",", "."))


def _statement(code: str, s: _Sentence, measures: dict[str, float] | None = None, gpu: Gpu | None = None) -> PerfStatement:
    return PerfStatement(code, s.where, s.text[:300], measures or {}, gpu)


def _kv(s: _Sentence) -> PerfStatement | None:
    term = KV.search(s.text)
    if term is None:
        # vLLM preempts a running sequence only when the KV cache has no block left for it: a count of them is the pressure
        p = PREEMPTIONS.search(s.text)
        return _statement("perf.kv_cache_pressure", s, {"preemptions": _count(p)}) if p else None
    measures: dict[str, float] = {}
    pct = _near(PERCENT, s.text, term)
    if pct:
        measures["kv_cache_usage"] = round(_number(pct[0].group(1)) / 100, 6)
    elif re.search(r"usage|_perc", term.group(0), re.I) and (frac := _near(FRACTION, s.text, term)):
        measures["kv_cache_usage"] = _number(frac[0].group(1))
    if (w := WAITING.search(s.text)) is not None:
        measures["waiting"] = float(w.group(1) or w.group(2))
    if (r := RUNNING.search(s.text)) is not None:
        measures["running"] = float(r.group(1) or r.group(2))
    if (p := PREEMPTIONS.search(s.text)) is not None:
        measures["preemptions"] = _count(p)
    if QUEUE_WORDS.search(s.text) or PREEMPT.search(s.text):
        measures["queued"] = 1.0
    if "kv_cache_usage" in measures or "preemptions" in measures:
        return _statement("perf.kv_cache_pressure", s, measures)
    around = s.text[max(0, term.start() - NEAR // 2):term.end() + NEAR]  # the words about the cache, not the sentence's others
    if KV_FULL.search(around) or PREEMPT.search(around):
        return _statement("perf.kv_cache_pressure", s, measures)
    return None


def _prefix(s: _Sentence) -> PerfStatement | None:
    term = PREFIX.search(s.text)
    if term is None:
        return _prefix_unset(s)
    pct = _near(PERCENT, s.text, term)
    if pct and re.search(r"hit|rate|ratio", term.group(0), re.I):
        return _statement("perf.prefix_caching_off", s, {"prefix_cache_hit_rate": round(_number(pct[0].group(1)) / 100, 6)})
    if re.search(r"hit|rate|ratio", term.group(0), re.I) and re.search(r"\b(?:is|stays?|remains?|at|of|=|:)\s?(?:0|zero)\b(?![.,]\d)", s.text[term.end():term.end() + 30], re.I):
        return _statement("perf.prefix_caching_off", s, {"prefix_cache_hit_rate": 0.0})
    if PREFIX_OFF.search(s.text):
        return _statement("perf.prefix_caching_off", s)
    return None


def _prefix_unset(s: _Sentence) -> PerfStatement | None:
    """The engine started without prefix caching, said in words (`--enable-prefix-caching` never passed)."""
    return _statement("perf.prefix_caching_off", s) if PREFIX_FLAG_UNSET.search(s.text) else None


def _repeated_cache_misses(source: str, text: str) -> list[PerfStatement]:
    """Two or more API responses whose usage says no prompt token was read from the cache: a
    repeated request that missed, a 0 % hit rate measured by the client."""
    hits = [(text.count("\n", 0, m.start()) + 1, m) for m in CACHE_READ.finditer(text)]
    if len(hits) < 2 or any(int(m.group(1)) for _, m in hits):
        return []
    no, first = hits[0]
    line = text.splitlines()[no - 1].strip()[:300]
    return [PerfStatement("perf.prefix_caching_off", f"{source}:{no}", f"{line} ({len(hits)} responses, each {first.group(0)})",
                          {"prefix_cache_hit_rate": 0.0})]


# a table whose rows differ in the load or the batch cap: a sweep (doctor/logparse/bench_runs.py reads concurrency
# sweeps); its latencies grow with the load by design, so a spread between its rows is no regression
SWEEP_COLUMN = re.compile(r"^(?:max[-_ ]?)?concurren(?:t|cy)\b|^(?:num[-_ ]?)?(?:clients|users|concurrent requests)\b|^c$|^parallel(?: requests)?$|"
                          r"^(?:request[-_ ]?)?rate\b|^qps\b|"
                          # the prompt's length (a context-depth sweep): a longer prompt takes longer to prefill
                          r"^(?:depth|context(?:[-_ ]?(?:length|len|depth))?|(?:prompt|input)[-_ ]?(?:tok(?:en)?s?|len(?:gth)?)|isl)\b", re.I)
# the batch cap swept by its name: vLLM max_num_seqs, SGLang max_running_requests, TGI/TRT-LLM/LMDeploy max_batch_size,
# llama-server --parallel (its slots), or a bare "Cap" / "Batch cap"
CAP_COLUMN = re.compile(r"^(?:batch(?:ing)?[-_ ])?cap$|^-{0,2}max[-_ ]?num[-_ ]?seqs$|^-{0,2}max[-_ ]running[-_ ]requests$|^-{0,2}max[-_ ]batch[-_ ]size$|"
                        r"^(?:--parallel|-np|slots|n_parallel)$", re.I)
CAP_SCALING = 0.5  # throughput grown by at least half as much as the cap, from the smallest cap to the largest: the cap binds
CURRENT_ROW = re.compile(r"\b(?:before|current|default|baseline|old)\b", re.I)


def _cap_sweep(source: str, text: str) -> list[PerfStatement]:
    """A markdown table sweeping the engine's batch cap with an aggregate throughput column, where throughput grows
    nearly as fast as the cap: the smaller cap (the row marked "before"/"current", else the smallest) held the batch
    back. Measures: the cap it ran at (max_num_seqs), the cap of the best row (cap_best), and the growth per cap
    (cap_scaling: 1.0 is throughput growing as fast as the cap)."""
    from llm_doctor.logparse.bench_runs import _PER_REQUEST, _TABLE_TPS

    lines = text.splitlines()
    for no in range(1, len(lines)):
        if not TABLE_RULE.match(lines[no]) or (header := _cells(lines[no - 1])) is None:
            continue
        cap = next((i for i, h in enumerate(header) if CAP_COLUMN.search(h)), None)
        tps = next((i for i, h in enumerate(header) if _TABLE_TPS.search(h) and not _PER_REQUEST.search(h)), None)
        if cap is None or tps is None:
            continue
        rows: list[tuple[int, float, int, str]] = []
        for at in range(no + 1, len(lines)):
            cells = _cells(lines[at])
            if cells is None:
                break
            c = re.match(r"\d+", cells[cap]) if cap < len(cells) else None
            t = re.search(r"\d[\d,]*(?:\.\d+)?", cells[tps]) if tps < len(cells) else None
            if c and t:
                rows.append((int(c.group(0)), _number(t.group(0)), at + 1, cells[cap]))
        if len(rows) < 2:
            continue
        low, high = min(rows), max(rows)
        ran = next((r for r in rows if CURRENT_ROW.search(r[3])), low)
        best = max(rows, key=lambda r: r[1])
        if high[0] < 2 * low[0] or low[1] <= 0 or best[0] <= ran[0]:
            continue
        scaling = (high[1] / low[1]) / (high[0] / low[0])
        if scaling < CAP_SCALING:
            continue
        said = (f"{header[cap]} {ran[3]}: {header[tps]} {ran[1]:g}; {header[cap]} {best[3]}: {best[1]:g} "
                f"({high[1] / low[1]:.1f}x the throughput for {high[0] / low[0]:g}x the cap)")
        return [PerfStatement("perf.batching_limited", f"{source}:{ran[2]}", said[:300],
                              {"max_num_seqs": float(ran[0]), "cap_best": float(best[0]), "cap_scaling": round(scaling, 3)})]
    return []


# a run's outcome at the end of its line in a list of experiments ("... --gpu-memory-utilization 0.941 ... - Crash",
# "... 0.9 ... - No Crash")
RUN_OK = re.compile(r"\b(?:no|without)\s(?:crash(?:es)?|OOMs?)\b|\b(?:works?|fine|ok|passe[sd]|stable)\s*\W*$", re.I)
RUN_FAILED = re.compile(r"\b(?:crash(?:es|ed)?|OOMs?|out[ -]of[ -]memory)\b", re.I)


def _share_runs(source: str, text: str) -> list[PerfStatement]:
    """Runs listed one a line with the engine's memory share and their outcome, where a run at a higher share
    crashed and one at a lower share did not: the share leaves no headroom for the peak (measures as a cure
    statement gives them: the share it failed at and the one that held)."""
    failed: list[tuple[float, int, str]] = []
    held: list[float] = []
    for no, raw in enumerate(text.splitlines(), 1):
        name = CURE_SHARE.search(raw)
        value = SHARE_VALUE.search(raw, name.end(), name.end() + 30) if name else None
        if value is None:
            continue
        share = _number(value.group(2))
        if RUN_OK.search(raw):
            held.append(share)
        elif RUN_FAILED.search(raw):
            failed.append((share, no, " ".join(raw.split())))
    lower = [h for h in held if failed and h < max(failed)[0]]
    if not lower:
        return []
    share, no, line = max(failed)
    said = f"{line} (held at {max(lower):g})"
    return [PerfStatement("perf.memory_overcommitted", f"{source}:{no}", said[:300],
                          {"oom_cured": 1.0, "memory_share": share, "cured_share": max(lower)})]


def _latency_spread(source: str, text: str) -> list[PerfStatement]:
    """A markdown table whose TTFT or inter-token latency column holds a row SPREAD times another's: the
    same measure on the same hardware, so the fast row shows what the hardware gives and the slow one is
    well above it (a version, a path, a setting that regressed), whatever an absolute threshold says."""
    out: list[PerfStatement] = []
    lines = text.splitlines()
    header: list[str] = []
    rows: list[tuple[int, list[str]]] = []
    for no, raw in enumerate([*lines, ""], 1):
        cells = _cells(raw)
        if cells is not None and no >= 2 and TABLE_RULE.match(raw) and (above := _cells(lines[no - 2])):
            header, rows = above, []
            continue
        if cells is not None and header:
            rows.append((no, cells))
            continue
        swept = any(SWEEP_COLUMN.search(h) or CAP_COLUMN.search(h) for h in header)  # rows at other loads: no regression
        for col, name in enumerate(header):
            if not swept and DECODE_RATE.search(name) and not PREFILL_WORDS.search(name) and (slow := _rate_spread(rows, col)):
                said = f"{name} {slow[1][col]} ({slow[1][0]}) against {slow[2][col]} ({slow[2][0]}): {slow[3]:.1f}x"
                out.append(PerfStatement("perf.high_latency", f"{source}:{slow[0]}", said[:300],
                                         {"latency_ratio": round(slow[3], 2), "itl_s": round(1 / slow[4], 6)}))
                break
            if swept or not (TTFT.search(name) or ITL.search(name)):
                continue
            timed = [(_seconds(d), no, r) for no, r in rows if col < len(r) and (d := DURATION.search(r[col]))]
            if len(timed) < 2:
                continue
            (best, _, fast), (worst, at, slow) = min(timed, key=lambda t: t[0]), max(timed, key=lambda t: t[0])
            if best > 0 and worst >= SPREAD * best:
                said = f"{name} {slow[col]} ({slow[0]}) against {fast[col]} ({fast[0]}): {worst / best:.1f}x"
                out.append(PerfStatement("perf.high_latency", f"{source}:{at}", said[:300], {"latency_ratio": round(worst / best, 2)}))
                break
        header, rows = [], []
    return out


# a column of one request's decode speed (a table's "decode rate", "generation speed", "decode tok/s")
DECODE_RATE = re.compile(r"\b(?:decode|decoding|generation|eval) (?:rate|speed|tok(?:en)?s?/s|t/s)\b", re.I)


def _rate_spread(rows: list[tuple[int, list[str]]], col: int) -> tuple[int, list[str], list[str], float, float] | None:
    """The slowest row of a decode-speed column when the fastest is SPREAD times it: (its line, its cells, the
    fastest row's cells, the ratio, the slow speed in tokens/s)."""
    rated = [(_number(m.group("tps")), no, r) for no, r in rows if col < len(r) and (m := SPEED.search(r[col]))]
    if len(rated) < 2:
        return None
    (slow, at, low), (fast, _, high) = min(rated, key=lambda t: t[0]), max(rated, key=lambda t: t[0])
    return (at, low, high, fast / slow, slow) if slow > 0 and fast >= SPREAD * slow else None


def _latency(s: _Sentence) -> PerfStatement | None:
    measures: dict[str, float] = {}
    stated = False
    for m in SPEED.finditer(s.text):  # a decode speed said low (or against a faster one of the same run): its inter-token latency
        if (SPEED_LOW.search(s.text[max(0, m.start() - 40):m.start()]) or _slower_than(s.text, m)) and not PREFILL_WORDS.search(
                s.text[max(0, m.start() - 40):m.end() + 15]):
            tps = _number(m.group("tps"))
            if tps > 0:
                measures["itl_s"] = max(measures.get("itl_s", 0.0), round(1 / tps, 6))
    if (t := TIME_FOR_TOKENS.search(s.text)) is not None:
        secs = _number(t.group("s") or t.group("s2") or t.group("s3")) * (
            60 if (t.group("unit") or t.group("unit2") or t.group("unit3")).lower().startswith("m") else 1)
        tokens = int(t.group("n") or t.group("n2") or 1)
        if tokens > 1 or t.group("s3"):
            measures["itl_s"] = max(measures.get("itl_s", 0.0), round(secs / tokens, 6))
    terms = sorted(m.start() for rx in (TTFT, ITL) for m in rx.finditer(s.text))
    for name, rx in (("ttft_s", TTFT), ("itl_s", ITL)):
        term = rx.search(s.text)
        if term is None:
            continue
        durations = _latency_readings(s.text, term, terms)
        if durations:
            value = max(_seconds(d) for d in durations)
            if name == "ttft_s" and _prefill_of_prompt(s.text, value):
                continue  # the prompt's own prefill at the rate the run measured: no time lost elsewhere to judge
            measures[name.replace("_s", "_tail_s") if _tail(s.text, term) else name] = value
        else:
            stated = stated or bool(LATENCY_HIGH.search(s.text))
    return _statement("perf.high_latency", s, measures) if measures or stated else None


# a reading that another follows as its new value ("from 2.1 s to 180 ms", "2450 ms -> 310 ms"): the first is the past
THEN_NOW = re.compile(r"\s?\)?\s?(?:to|->|→|=>|⇒)\s?\*{0,2}~?\d", re.I)
# a sentence told as before and after ("Before this change TTFT was 3.2 s; after it is 0.4 s", "previously 3 s, now 0.4 s"):
# what runs now is the part after the turn
TURN = re.compile(r"\b(?:before|previously|used to|originally|formerly|without (?:the|this) (?:fix|change|patch|PR))\b.*?"
                  r"(?P<now>\b(?:after|now|with (?:the|this) (?:fix|change|patch|PR))\b)", re.I)


def _latency_readings(text: str, term: re.Match[str], terms: list[int]) -> list[re.Match[str]]:
    """The durations that measure the latency term now: those after it up to the next latency term ("TTFT 120 ms and
    ITL 9 ms": 9 ms is the ITL's, 120 ms the TTFT's), the one just before it only where none follows ("a 20 s TTFT"),
    and, of a figure and the new value it changed to, the new one."""
    stop = next((t for t in terms if t > term.start()), len(text))
    found = [m for m in _near(DURATION, text, term) if m.start() < stop or m.start() < term.start()]
    after = [m for m in found if m.start() >= term.end()]
    found = after or found
    now = [m for m in found if not THEN_NOW.match(text, m.end())]
    turn = TURN.search(text)
    if turn is not None and any(m.start() < turn.start("now") for m in now):
        later = [m for m in DURATION.finditer(text, turn.end("now"))]
        now = later[:1] or now
    return now


# two decode speeds set against each other ("5 t/s vs 36 t/s"), in a sentence that says one is the slow one
VERSUS = re.compile(r"\s?(?:vs\.?|versus|against|compared (?:to|with)|instead of|rather than)\s(?:~|about\s|around\s)?", re.I)
SLOWER = re.compile(r"\b(?:slow\w*|drops?|dropped|falls?|fell|collaps\w*|degrad\w*|regress\w*|stall\w*)\b", re.I)


def _slower_than(text: str, m: re.Match[str]) -> bool:
    """The speed is set against one SPREAD times faster ("5 t/s vs 36 t/s", "7.7 tok/s instead of 59.4 tok/s") in a
    sentence that calls it slower: the same measure, so the fast figure is what the hardware gives."""
    versus = VERSUS.match(text, m.end())
    other = SPEED.match(text, versus.end()) if versus else None
    return bool(other and SLOWER.search(text) and _number(other.group("tps")) >= SPREAD * _number(m.group("tps")))


# a percentile in the tail or the worst of a run ("p95 TTFT", "TTFT P99", "max ITL"): what the slowest requests saw, where
# the mean or median (p50) is what a request sees
TAIL = re.compile(r"\b(?:p9\d(?:\.\d+)?|p99\.\d+|max(?:imum)?|worst|tail)\b", re.I)
TAIL_AFTER = re.compile(r"[\s(\[_:-]{0,3}" + TAIL.pattern, re.I)


def _tail(text: str, term: re.Match[str]) -> bool:
    """The latency term is qualified by a tail percentile, just before it or just after it."""
    before = text[max(0, term.start() - 12):term.start()].split(";")[-1]
    return bool(TAIL.search(before) or TAIL_AFTER.match(text, term.end()))


# a prefill (prompt processing) rate: "prefill tok/s (mean) 834.3" (a table's column read with its cell), "9,779 prompt tok
# @ 1167.2 tok/s", "prompt eval rate: 1147 tokens/s"
PREFILL_RATE = re.compile(r"\b(?:prefill|prompt(?:[ _]eval(?:uation)?|[ -]processing)?|pp\d*)\b[^;\d]{0,24}?(?:tok(?:en)?s?/s(?:ec)?|t/s)\b[^;\d]{0,14}?"
                          r"(?P<a>\d[\d,]*(?:\.\d+)?)|\b(?:prefill|prompt|pp\d*)\b[^;]{0,40}?(?P<b>\d[\d,]*(?:\.\d+)?)\s?(?:tok(?:en)?s?/s(?:ec)?|t/s)\b", re.I)
COUNT = re.compile(r"(?<![\w.])~?(\d{1,3}(?:,\d{3})+|\d{3,})(?![\d.,]*\s?(?:ms|s\b|%|MiB|GiB|GB|W\b|tok(?:en)?s?/s|t/s))")
PROMPT_MATCH = 0.25  # stated prompt tokens within this share of rate x TTFT: the TTFT is that prompt's prefill


def _prefill_of_prompt(text: str, ttft: float) -> bool:
    """The sentence states the prefill rate and a prompt length that rate x TTFT gives ("prompt tok 87,850; prefill tok/s
    834.3; TTFT 105,322 ms"): the TTFT is the time that prompt takes to prefill, set by its length and the compute, which a
    fixed TTFT threshold cannot judge (a floor needs the model's FLOPs per token)."""
    rate = PREFILL_RATE.search(text)
    if rate is None:
        return False
    tokens = _number(rate.group("a") or rate.group("b")) * ttft
    return tokens > 0 and any(abs(_number(c.group(1)) - tokens) <= PROMPT_MATCH * tokens for c in COUNT.finditer(text))


def _seconds(m: re.Match[str]) -> float:
    value, unit = _number(m.group(1) or m.group(3)), (m.group(2) or m.group(4)).lower()
    return value / 1000 if unit.startswith("m") else value


def _throttle(s: _Sentence) -> PerfStatement | None:
    reasons: list[str] = []
    inactive = False
    for name, rx in REASONS:
        for m in rx.finditer(s.text):
            if INACTIVE.match(s.text[m.end():m.end() + 30].lstrip(" |*:`=")) or NEGATED.search(s.text[max(0, m.start() - 32):m.start()]):
                inactive = True
                continue
            # the generic word after NVML's own name of it: one reason
            covered = (name == "hw_slowdown" and {"hw_thermal_slowdown", "hw_power_brake_slowdown"} & set(reasons)) or (
                name == "thermal" and {"hw_thermal_slowdown", "sw_thermal_slowdown"} & set(reasons))
            if name not in reasons and not covered:
                reasons.append(name)
    # nvidia-smi's section title ("Clocks Throttle Reasons") names the reasons, it states none
    if not reasons and (inactive or not THROTTLE.search(SECTION_TITLE.sub("", s.text)) or not GPU_CONTEXT.search(s.text)):
        return None  # ("throttling_error" is an API's rate limit, not a GPU's clock)
    index = GPU_INDEX.search(s.text)
    gpu = Gpu(index=int(index.group(1)) if index else 0, throttle_reasons=reasons)
    clocks = [_number(m.group(1)) for m in MHZ.finditer(s.text)]
    if clocks:
        gpu.sm_clock_mhz = clocks[0]
        if len(clocks) > 1 and max(clocks[1:]) > clocks[0] and re.search(r"\b(?:max|maximum|boost|rated|instead of|from|of|below)\b", s.text, re.I):
            gpu.sm_clock_max_mhz = max(clocks[1:])
    for m in WATTS.finditer(s.text):
        if re.search(r"limit|cap|TDP|max", s.text[max(0, m.start() - 25):m.end() + 25], re.I) and gpu.power_draw_w is not None:
            gpu.power_limit_w = float(m.group(1))
        elif gpu.power_draw_w is None:
            gpu.power_draw_w = float(m.group(1))
    temp = CELSIUS.search(s.text)
    if temp:
        gpu.temperature_c = float(temp.group(1))
    measures = {k: v for k, v in (("sm_clock_mhz", gpu.sm_clock_mhz), ("power_draw_w", gpu.power_draw_w),
                                  ("power_limit_w", gpu.power_limit_w), ("temperature_c", gpu.temperature_c)) if v is not None}
    return _statement("perf.gpu_throttled", s, measures, gpu)


def _cpu(s: _Sentence) -> PerfStatement | None:
    if SERVER_PATH.search(s.text) and OFFLINE_PATH.search(s.text) and PATH_GAP.search(s.text):
        return _statement("perf.cpu_bound", s)  # the server's own work is what the offline path does not do
    if not CPU.search(s.text):
        return None
    pct = CPU_PERCENT.search(s.text)
    return _statement("perf.cpu_bound", s, {"cpu_percent": _number(pct.group(1) or pct.group(2))} if pct else {})


def _gpu_util(s: _Sentence) -> PerfStatement | None:
    term = GPU_UTIL.search(s.text)
    if term is None:
        return None
    pct = sorted({m.start(): m for t in GPU_UTIL.finditer(s.text) for m in _near(PERCENT, s.text, t)}.values(), key=lambda m: m.start())
    if pct:
        # of several readings (near any of the terms), the one the sentence says is low ("only 55%") is the complaint,
        # else the lowest: two set-ups compared ("1 GPU: load GPU 90-100% ... 2 GPUs: load GPU 5-10%")
        said = next((m for m in pct if LOWEST.search(s.text[max(0, m.start() - 12):m.start()])), None) or min(
            pct, key=lambda m: _number(m.group(1)))
        return _statement("perf.low_gpu_util", s, {"gpu_util_percent": _number(said.group(1))})
    return _statement("perf.low_gpu_util", s) if LOW_WORDS.search(s.text) else None


def _layers(s: _Sentence) -> PerfStatement | None:
    m = LAYERS.search(s.text)
    if m is None:
        return None
    done, total = int(m.group("done") or m.group("only")), int(m.group("all") or m.group("total"))
    if not 0 <= done < total:
        return None  # every layer on the GPU (or a count that is not a share)
    return _statement("perf.low_gpu_util", s, {"offload_layers_gpu": float(done), "offload_layers_model": float(total)})


def _offload_gb(s: _Sentence) -> PerfStatement | None:
    """vLLM told to keep part of every GPU's weights in host memory (--cpu-offload-gb N, N > 0)."""
    m = CPU_OFFLOAD.search(s.text)
    return _statement("perf.low_gpu_util", s, {"cpu_offload_gb": _number(m.group("gib"))}) if m and _number(m.group("gib")) > 0 else None


def _batching(s: _Sentence) -> PerfStatement | None:
    at_once = AT_ONCE.search(s.text)
    if at_once is None and not BATCH.search(s.text):
        return None
    return _statement("perf.batching_limited", s, {"running": float(at_once.group(1))} if at_once else {})


def _memory(s: _Sentence) -> PerfStatement | None:
    m = MEMORY_SHARE.search(s.text)
    if m is None:
        return None
    return _statement("perf.memory_overcommitted", s, {"memory_share": _number(m.group("share"))})


def _memory_cure(s: _Sentence) -> PerfStatement | None:
    """An OOM the person ties to the engine's memory share: lowering the share cured it, or the share is named
    too high as its cause (checks/perf/memory_headroom.py ranks this perf.memory_overcommitted before the
    load.runtime_oom it explains). The share it failed at (memory_share) and the one that worked (cured_share)
    are kept where the sentence gives them; advice ("try lowering ...") states nothing that happened."""
    name = CURE_SHARE.search(s.text)
    if name is None or not OOM_WORDS.search(s.text) or ADVICE.search(s.text):
        return None
    around = s.text[max(0, name.start() - NEAR):name.end() + NEAR]
    lowered, too_high = LOWERED.search(around), TOO_HIGH.search(around) or CAUSES_OOM.match(s.text, name.end())
    if not (lowered or too_high):
        return None
    measures = {"oom_cured": 1.0}
    span = FROM_TO.search(s.text, name.end(), name.end() + NEAR)
    if span is not None and _number(span.group(2)) < _number(span.group(1)):
        measures.update(memory_share=_number(span.group(1)), cured_share=_number(span.group(2)))
    elif (value := SHARE_VALUE.search(s.text, name.end(), name.end() + 30)) is not None:  # "lowered it to 0.8": the cure
        measures["cured_share" if value.group("to") and not too_high else "memory_share"] = _number(value.group(2))
    return _statement("perf.memory_overcommitted", s, measures)


# the cure said in the next sentence, of the share the one before named ("... to 0.7 would cause OOM. So decrease it from 0.7 to 0.6.")
LOWERED_IT = re.compile(r"^(?:so|then|and|we|I)?,?\s?(?:lower|decrease|reduce|drop|set)\w*\s(?:it|the share|the value)\s"
                        r"(?:from\s?[`'\"]?(0?\.\d+|1\.0+)[`'\"]?\s)?to\s?[`'\"]?(0?\.\d+)(?![\w%]|\.\d)", re.I)


def _cured_next(cure: PerfStatement, s: _Sentence) -> bool:
    """The sentence after a share named as an OOM's cause lowers "it" to a value: that value is the share that works."""
    x = cure.measures
    m = LOWERED_IT.match(s.text)
    if cure.code != "perf.memory_overcommitted" or not x.get("oom_cured") or "cured_share" in x or "memory_share" not in x or m is None:
        return False
    if _number(m.group(2)) >= x["memory_share"] or (m.group(1) and _number(m.group(1)) != x["memory_share"]):
        return False
    x["cured_share"] = _number(m.group(2))
    cure.text = f"{cure.text} {s.text}"[:300]
    return True


def cure_engine(st: PerfStatement) -> str:
    """The engine whose share a cure statement names, by the share's name in its sentence."""
    name = CURE_SHARE.search(st.text)
    key = name.group("share_name").lower().replace("-", "_").replace(" ", "_") if name else "gpu"
    return next(e for k, e in CURE_ENGINES.items() if key.startswith(k))


def _batch_cap(s: _Sentence) -> PerfStatement | None:
    m = BATCH_CAP.search(s.text)
    return _statement("perf.batching_limited", s, {"max_num_seqs": float(m.group("cap"))}) if m else None


def _eager(s: _Sentence) -> PerfStatement | None:
    """CUDA graphs are off: decode pays a kernel launch per layer and step (checks/perf/engine_log.py
    judges the flag where a log or a command gives it)."""
    m = EAGER.search(s.text)
    if m is None or EAGER_NEGATED.search(s.text[max(0, m.start() - 30):m.start()]):
        return None
    return _statement("perf.eager_mode", s)


def _cold_reload(s: _Sentence) -> PerfStatement | None:
    """A request after an idle gap COLD_SPREAD times slower than the rerun, said with the model's unload (keep_alive):
    the latency is the model's load into GPU memory again (perf.stated reports it with the keep-alive fix)."""
    if KEEP_ALIVE.search(s.text) is None or UNLOADED.search(s.text) is None:
        return None
    times = sorted(_seconds(m) for m in DURATION.finditer(s.text))
    if len(times) < 2 or times[0] <= 0 or times[-1] < COLD_SPREAD * times[0]:
        return None
    return _statement("perf.high_latency", s, {"cold_load_s": times[-1], "warm_s": times[0]})


def _capture_raised(s: _Sentence) -> PerfStatement | None:
    """The capture ceiling raised, and the run faster for it: decode batches between the old ceiling and the new one
    had no graph (perf.stated reports it with the ceiling that helped as the fix)."""
    m = next((m for rx in CAPTURE_RAISED if (m := rx.search(s.text))), None)
    if m is None or int(m.group("now")) <= int(m.group("was")) or not FASTER.search(s.text):
        return None
    sglang = m.group("term").lower().replace("-", "_") == "cuda_graph_max_bs"
    return _statement("perf.eager_mode", s, {"capture_size": float(m.group("was")), "capture_raised": float(m.group("now")),
                                             "capture_sglang": float(sglang)})


def _busbw(s: _Sentence) -> PerfStatement | None:
    """An nccl-tests bus bandwidth said to be low ("reaches only ~3 GB/s busbw"), or set against a run of the same
    test BUSBW_GAIN times faster ("98 Gb/s single-HCA -> 161 Gb/s with both HCAs"): the slow path is the complaint. In GB/s (bytes, as the tests print it); perf.stated reports it with the figures, no topology to judge."""
    if BUSBW_TERM.search(s.text) is None:
        return None
    figures = list(BANDWIDTH.finditer(s.text))
    for m in figures:
        after = BETTER.match(s.text, m.end())
        other = BANDWIDTH.match(s.text, after.end()) if after else None
        if other is not None and _gbs(other) >= BUSBW_GAIN * _gbs(m):
            return _statement("perf.slow_interconnect", s, {"busbw_gbs": _gbs(m), "busbw_other_gbs": _gbs(other)})
        if BANDWIDTH_LOW.search(s.text[max(0, m.start() - 24):m.start()]):
            return _statement("perf.slow_interconnect", s, {"busbw_gbs": _gbs(m)})
    return None


BUSBW_GAIN = 1.5  # another set-up of the same test this much faster: beyond run-to-run noise, the link is the difference


def _gbs(m: re.Match[str]) -> float:
    """A bandwidth figure in GB/s: bits (Gb/s, Gbps, a NIC's rating) are an eighth of it."""
    value = _number(m.group(1))
    return round(value / 8 if m.group(2)[1] == "b" else value, 3)


def _tp_pair(s: _Sentence) -> PerfStatement | None:
    """A wider TP that gives at most NO_MORE times the throughput of a narrower one, said with both figures: the extra
    GPUs go to all-reduces, and replicas of the narrower TP would serve more (perf.parallelism judges the per-GPU
    figures as it judges a benchmark table's). A wider TP that scales is a healthy trade of GPUs for latency: none."""
    sizes = [int(m.group(1)) for m in TP_SIZE.finditer(s.text)]
    tputs = [_number(m.group("n") or m.group("bare")) for m in THROUGHPUT.finditer(s.text)]
    if len(sizes) != 2 or len(tputs) != 2 or sizes[0] == sizes[1] or min(tputs) <= 0:
        return None
    (narrow, v_narrow), (wide, v_wide) = sorted(zip(sizes, tputs, strict=True))  # paired in the order they are said
    if v_wide > NO_MORE * v_narrow:
        return None
    return _statement("perf.tp_mismatch", s, {"tp_wide": float(wide), "tp_narrow": float(narrow),
                                              "per_gpu_wide": round(v_wide / wide, 3), "per_gpu_narrow": round(v_narrow / narrow, 3)})


def _tp_slower(s: _Sentence) -> list[PerfStatement]:
    """More GPUs slower than fewer (or no faster), or TP traffic said to take a slow path between several GPUs.
    Against one GPU the model is shown to fit one: TP over more is larger than it needs, replicas would serve
    more (perf.tp_mismatch), and the per-layer all-reduce is what costs (perf.slow_interconnect, the link)."""
    if LINK_SLOW.search(s.text) and MULTI_GPU.search(s.text):
        return [_statement("perf.slow_interconnect", s)]
    if IDLE_GPUS.search(s.text):
        return [_statement("perf.tp_mismatch", s, {"idle_gpus": 1.0})]
    if TP_NODES.search(s.text):
        return [_statement("perf.tp_mismatch", s, {"across_nodes": 1.0})]
    if (scaled := SCALING.search(s.text)) is not None:
        got, paid = _number(scaled.group("got")), _number(scaled.group("paid"))
        return [_statement("perf.tp_mismatch", s, {"scaling": round(got / paid, 3)})] if 1 < paid and got < SCALING_SHARE * paid else []
    if not (TP_SLOWER.search(s.text) or (NO_GAIN.search(s.text) and MULTI_GPU.search(s.text))):
        return []
    one = [_statement("perf.tp_mismatch", s)] if ONE_GPU.search(s.text) else []
    return [*one, _statement("perf.slow_interconnect", s)]


def _deployment(found: list[PerfStatement], facts: Facts) -> None:
    """A memory share or a batch cap stated with the engine's own flag name is that engine's setting
    (perf.memory_headroom, perf.batching judge them); what a command line or the log gave stays."""
    for st in found:  # the share an OOM happened at, as the person says it (lowered from it, or too high)
        if st.measures.get("oom_cured") and "memory_share" in st.measures:
            _stated_setting(facts, cure_engine(st), "gpu_memory_utilization", st.measures["memory_share"], st.where)
            break
    for code, rx, engines, field, measure in (
            ("perf.memory_overcommitted", MEMORY_SHARE, MEMORY_ENGINES, "gpu_memory_utilization", "memory_share"),
            ("perf.batching_limited", BATCH_CAP, CAP_ENGINES, "max_num_seqs", "max_num_seqs"),
            ("perf.low_gpu_util", CPU_OFFLOAD, {"": "vllm"}, "cpu_offload_gb", "cpu_offload_gb")):
        said = next((st for st in found if st.code == code and measure in st.measures), None)
        named = rx.search(said.text) if said is not None else None
        if said is not None and named is not None:
            key = named.group("cap_name" if rx is BATCH_CAP else "name").lower().replace("-", "_") if rx is not CPU_OFFLOAD else ""
            _stated_setting(facts, next(e for k, e in engines.items() if key.startswith(k)), field, said.measures[measure], said.where)


def _stated_setting(facts: Facts, engine: str, field: str, value: float, where: str) -> None:
    from llm_doctor.facts.deployment import EngineConfig

    cfg = facts.deployment
    if cfg is not None and cfg.engine and (cfg.engine != engine or cfg.is_set(field)):
        return
    stated = EngineConfig(engine=engine, sources={field: f"stated at {where}"})
    setattr(stated, field, int(value) if field == "max_num_seqs" else value)
    facts.deployment = cfg.merge(stated) if cfg is not None and cfg.engine else stated


def _metrics(found: list[PerfStatement], engine: str) -> MetricsFacts | None:
    """The numbers of the statements as the metrics facts a stat line gives (one sample: what a
    person reports is the state of the run, so it stands as stat_lines.is_sustained lets one line stand)."""
    v: dict[str, float] = {}
    raw: dict[str, str] = {}
    # the worst of several statements is the complaint ("direct: TTFT 0.5 s; through the gateway: 17 s"):
    # the fullest KV cache first, the longest latency wins below
    found = sorted(found, key=lambda st: (st.code != "perf.kv_cache_pressure", -st.measures.get("kv_cache_usage", -1.0)))
    tails: dict[str, tuple[float, str]] = {}
    for st in found:
        said = f"{st.where}: {st.text}"
        x = st.measures
        if st.code == "perf.kv_cache_pressure" and "kv_cache_usage" not in v:
            usage = x.get("kv_cache_usage")
            queued = bool(x.get("waiting") or x.get("queued"))
            if usage is not None:
                full = usage >= stat_lines.FULL
                v.update(kv_cache_usage=usage, kv_cache_usage_max=usage, stat_samples=1, kv_samples=1,
                         kv_full_samples=float(full), queued_samples=float(queued), pressed_samples=float(full and queued),
                         capped_samples=float(queued and bool(x.get("running")) and usage < stat_lines.ROOM))
                raw["kv_cache_usage"] = said
            for name in ("waiting", "running"):
                if name in x:
                    v[name] = v[f"{name}_max"] = x[name]
                    raw[name] = said
            if "preemptions" in x and x["preemptions"] > v.get("preemptions_total", -1.0):  # the most of several rows
                v["preemptions_total"] = x["preemptions"]
                raw["preemptions_total"] = said
        elif st.code == "perf.high_latency":
            for name, key in (("ttft_s", "ttft"), ("itl_s", "itl")):
                if name in x and x[name] > v.get(f"{key}_mean_s", -1.0):
                    v[f"{key}_mean_s"] = x[name]
                    raw[key] = said
                tail = name.replace("_s", "_tail_s")
                if tail in x and x[tail] > tails.get(key, (-1.0, ""))[0]:
                    tails[key] = (x[tail], said)
        elif st.code == "perf.low_gpu_util" and "offload_layers_model" in x and "offload_layers_model" not in v:
            v.update(offload_layers_gpu=x["offload_layers_gpu"], offload_layers_model=x["offload_layers_model"])
            raw["offload"] = said
        elif st.code == "perf.prefix_caching_off" and "prefix_cache_hit_rate" in x and x["prefix_cache_hit_rate"] < v.get("prefix_cache_hit_rate", 2.0):
            # the lowest of several stated rates is the complaint ("off: 95 %, high: 0 %")
            v["prefix_cache_hit_rate"] = x["prefix_cache_hit_rate"]
            raw["prefix_cache_hit_rate"] = said
    for key, (value, said) in tails.items():  # a tail percentile stands only where no mean or median is given
        if f"{key}_mean_s" not in v:
            v[f"{key}_mean_s"] = value
            raw[key] = said
    if not v:
        return None
    return MetricsFacts(source="prose", engine=engine, available=True, values=v, raw=raw, origin="prose")
