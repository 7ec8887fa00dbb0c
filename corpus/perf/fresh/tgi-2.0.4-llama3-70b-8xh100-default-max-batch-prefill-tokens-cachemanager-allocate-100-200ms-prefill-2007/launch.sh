# default max_batch_prefill_tokens=4145
text-generation-launcher --model-id meta-llama/Meta-Llama-3-70B-Instruct --num-shard 8
# user-set
text-generation-launcher --model-id meta-llama/Meta-Llama-3-70B-Instruct --num-shard 8 --max-batch-prefill-tokens 65536
